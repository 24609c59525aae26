"""Reading a serial transcript of the sched> shell, for the boot tests'
Python checkers (scripts/test/*.sh run them with PYTHONPATH=scripts/lib).

    read(path)          the log as text: CRs out, kernel log lines out
    replies(text)       [(echoed command, [reply lines])] in prompt order
"""
import re

# Kernel log lines (`[   0.512345] INFO clock: ...`) print whenever they
# happen, also inside a reply or in the middle of an echoed command (the x86
# clock's refinement line, ~0.5 s after boot, landed inside a 1024-byte
# line once): the checkers take them out, wherever they start.
KLOG = re.compile(r"\[ *[0-9]+\.[0-9]{6}\] (?:INFO|WARN|ERROR|DEBUG|TRACE) [^\n]*\n")

PROMPT = "sched> "


def read(path, drop_klog=True):
    text = open(path, "rb").read().decode("utf-8", "replace").replace("\r", "")
    return KLOG.sub("", text) if drop_klog else text


def replies(text):
    """Splits TEXT at the prompts: each block is the echoed command line and
    the non-empty lines up to the next prompt."""
    out = []
    for block in text.split(PROMPT)[1:]:
        cmd, _, rest = block.partition("\n")
        out.append((cmd, [line for line in rest.split("\n") if line]))
    return out


def panicked(text):
    return "PANIC" in text or "panicked" in text
