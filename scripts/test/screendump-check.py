#!/usr/bin/env python3
"""Takes a QEMU screendump through the human monitor and checks that the
kernel's framebuffer console drew text on it.

    scripts/screendump-check.py MONITOR_SOCKET OUT.ppm R,G,B [TEXT_ROWS]

Asks the monitor at MONITOR_SOCKET (QEMU `-monitor unix:PATH,server=on,wait=off`)
for `screendump OUT.ppm`, waits for the file, and counts, in the first
TEXT_ROWS text rows (16 px each, default 5), the pixels that have exactly the
console's text colour R,G,B (glyph cores are drawn at full coverage). Passes
(exit 0) when the image is not all black and at least MIN_TEXT_PIXELS such
pixels are there; prints one line with the figures either way. Also writes
OUT.png beside the PPM for people to look at.
"""
import os
import socket
import struct
import sys
import time
import zlib

MIN_TEXT_PIXELS = 200
CELL_HEIGHT = 16


def screendump(sock_path, out):
    if os.path.exists(out):
        os.unlink(out)
    s = socket.socket(socket.AF_UNIX)
    s.settimeout(5)
    s.connect(sock_path)
    banner = b""
    while b"(qemu)" not in banner:  # the monitor's banner and prompt
        chunk = s.recv(65536)
        if not chunk:
            raise OSError("the monitor closed the connection")
        banner += chunk
    s.sendall(f"screendump {out}\n".encode())
    deadline = time.time() + 10
    size = -1
    # The file is complete once its size stops changing.
    while time.time() < deadline:
        time.sleep(0.2)
        if os.path.exists(out):
            now = os.path.getsize(out)
            if now == size and now > 0:
                break
            size = now
    s.close()


def read_ppm(path):
    data = open(path, "rb").read()
    fields = []
    pos = 0
    # P6 header: magic, width, height, maxval, separated by whitespace.
    while len(fields) < 4:
        while data[pos : pos + 1].isspace():
            pos += 1
        start = pos
        while not data[pos : pos + 1].isspace():
            pos += 1
        fields.append(data[start:pos])
    pos += 1
    if fields[0] != b"P6" or fields[3] != b"255":
        raise ValueError(f"not an 8-bit P6 PPM: {fields}")
    width, height = int(fields[1]), int(fields[2])
    return width, height, data[pos : pos + width * height * 3]


def write_png(path, width, height, pixels):
    raw = b"".join(b"\x00" + pixels[y * width * 3 : (y + 1) * width * 3] for y in range(height))

    def chunk(kind, body):
        return struct.pack(">I", len(body)) + kind + body + struct.pack(">I", zlib.crc32(kind + body))

    with open(path, "wb") as f:
        f.write(b"\x89PNG\r\n\x1a\n")
        f.write(chunk(b"IHDR", struct.pack(">IIBBBBB", width, height, 8, 2, 0, 0, 0)))
        f.write(chunk(b"IDAT", zlib.compress(raw)))
        f.write(chunk(b"IEND", b""))


def main():
    if len(sys.argv) not in (4, 5):
        print(__doc__, file=sys.stderr)
        return 2
    sock_path, out, colour = sys.argv[1], sys.argv[2], sys.argv[3]
    rows = int(sys.argv[4]) if len(sys.argv) == 5 else 5
    rgb = bytes(int(c) for c in colour.split(","))
    try:
        screendump(sock_path, out)
        width, height, pixels = read_ppm(out)
    except (OSError, ValueError) as e:
        print(f"screendump: FAIL: {e}")
        return 1
    write_png(out[: -len(".ppm")] + ".png" if out.endswith(".ppm") else out + ".png", width, height, pixels)
    top = min(height, rows * CELL_HEIGHT)
    text = sum(1 for i in range(0, width * top * 3, 3) if pixels[i : i + 3] == rgb)
    lit = sum(1 for i in range(0, len(pixels), 3) if pixels[i : i + 3] != b"\x00\x00\x00")
    verdict = "PASS" if lit > 0 and text >= MIN_TEXT_PIXELS else "FAIL"
    print(
        f"screendump: {verdict}: {width}x{height}, {text} pixels of the text colour "
        f"{colour} in the first {rows} text rows (need {MIN_TEXT_PIXELS}), {lit} non-black in all"
    )
    return 0 if verdict == "PASS" else 1


if __name__ == "__main__":
    sys.exit(main())
