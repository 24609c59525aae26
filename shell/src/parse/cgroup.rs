//! `cgroup create NAME [PARENT]`, `cgroup weight NAME W`,
//! `cgroup attach NAME PID`, `cgroup ls`, `cgroup rm NAME`: task groups (the
//! `sched` crate's `fair::group`, Linux's cgroup v2 `cpu.weight`; `rm` is
//! `rmdir` of a cgroup directory).

use alloc::string::String;

use super::args::{err, limit, no_options, pid};
use super::{Command, Limit, Pid};
use crate::error::{quote, ArgError, Error};

/// `cpu.weight`'s range and default (Linux's `CGROUP_WEIGHT_MIN/MAX/DFL`).
pub const CPU_WEIGHT: Limit = Limit {
    name: "W",
    min: 1,
    max: 10_000,
    default: Some(100),
    doc: "cpu.weight, the share against sibling groups",
};

/// Longest group name.
pub const MAX_GROUP_NAME: usize = 32;

/// A `cgroup` subcommand. Names are checked here (letters, digits, `_`,
/// `-`, `.`, at most [`MAX_GROUP_NAME`], not `root`, which names the root
/// group as a parent); whether a group exists is the kernel's to check.
#[derive(Clone, Debug, PartialEq, Eq)]
pub enum CgroupCmd {
    /// `cgroup create NAME [PARENT]` (PARENT: a group's name, default the
    /// root), at weight 100.
    Create {
        /// The new group's name.
        name: String,
        /// The parent's name; `None`: the root.
        parent: Option<String>,
    },
    /// `cgroup weight NAME W`.
    Weight {
        /// The group.
        name: String,
        /// 1..=10000.
        weight: u32,
    },
    /// `cgroup attach NAME PID` (NAME `root`: back to the root group).
    Attach {
        /// The group (`root` for the root group).
        name: String,
        /// The thread.
        pid: Pid,
    },
    /// `cgroup ls`.
    Ls,
    /// `cgroup rm NAME`: destroys a group with no tasks and no child groups
    /// (`root` cannot be removed; the kernel refuses a busy group).
    Rm {
        /// The group.
        name: String,
    },
}

fn group_name(w: &str, root_ok: bool) -> Result<String, Error> {
    const C: &str = "cgroup";
    let ok = !w.is_empty()
        && w.len() <= MAX_GROUP_NAME
        && w.bytes()
            .all(|b| b.is_ascii_alphanumeric() || b == b'_' || b == b'-' || b == b'.');
    if !ok || (w == "root" && !root_ok) {
        return err(C, ArgError::BadGroupName(quote(w)));
    }
    Ok(String::from(w))
}

pub(super) fn parse_cgroup(args: &[&str]) -> Result<Command, Error> {
    const C: &str = "cgroup";
    no_options(C, args)?;
    let Some(&action) = args.first() else {
        return err(C, ArgError::Missing("create|weight|attach|ls|rm"));
    };
    let rest = &args[1..];
    let cmd = match action {
        "create" => match rest {
            [] => return err(C, ArgError::Missing("NAME")),
            [name] => CgroupCmd::Create {
                name: group_name(name, false)?,
                parent: None,
            },
            [name, parent] => CgroupCmd::Create {
                name: group_name(name, false)?,
                parent: match group_name(parent, true)? {
                    p if p == "root" => None,
                    p => Some(p),
                },
            },
            [_, _, extra, ..] => return err(C, ArgError::Unexpected(quote(extra))),
        },
        "weight" => match rest {
            [] => return err(C, ArgError::Missing("NAME")),
            [_] => return err(C, ArgError::Missing("W")),
            [name, w] => CgroupCmd::Weight {
                name: group_name(name, false)?,
                weight: limit(C, &CPU_WEIGHT, w)? as u32,
            },
            [_, _, extra, ..] => return err(C, ArgError::Unexpected(quote(extra))),
        },
        "attach" => match rest {
            [] => return err(C, ArgError::Missing("NAME")),
            [_] => return err(C, ArgError::Missing("PID")),
            [name, p] => CgroupCmd::Attach {
                name: group_name(name, true)?,
                pid: pid(C, p)?,
            },
            [_, _, extra, ..] => return err(C, ArgError::Unexpected(quote(extra))),
        },
        "ls" => match rest {
            [] => CgroupCmd::Ls,
            [extra, ..] => return err(C, ArgError::Unexpected(quote(extra))),
        },
        "rm" => match rest {
            [] => return err(C, ArgError::Missing("NAME")),
            ["root"] => return err(C, ArgError::RootGroupNotRemovable),
            [name] => CgroupCmd::Rm {
                name: group_name(name, false)?,
            },
            [_, extra, ..] => return err(C, ArgError::Unexpected(quote(extra))),
        },
        a => return err(C, ArgError::UnknownCgroupAction(quote(a))),
    };
    Ok(Command::Cgroup(cmd))
}

#[cfg(test)]
mod tests {
    use super::*;
    use alloc::string::ToString;

    fn parse(line: &str) -> Result<Command, String> {
        let words: alloc::vec::Vec<&str> = line.split_whitespace().collect();
        parse_cgroup(&words).map_err(|e| e.to_string())
    }

    #[test]
    fn rm_names_a_group() {
        assert_eq!(
            parse("rm a.b-c_1"),
            Ok(Command::Cgroup(CgroupCmd::Rm {
                name: String::from("a.b-c_1")
            }))
        );
    }

    /// Every refusal of `cgroup rm`, by the start of its message (the
    /// usage line follows some).
    #[test]
    fn rm_errors() {
        let starts = |l: &str, want: &str| {
            let got = parse(l).unwrap_err();
            assert!(
                got.starts_with(want),
                "{l:?}: got {got:?}, want {want:?}..."
            );
        };
        starts("rm", "cgroup: missing NAME");
        starts("rm root", "cgroup: the root group cannot be removed");
        starts("rm a/b", "cgroup: bad group name 'a/b'");
        starts(
            "rm abcdefghijklmnopqrstuvwxyz0123456",
            "cgroup: bad group name",
        );
        starts("rm a b", "cgroup: unexpected argument 'b'");
        starts("rm -f a", "cgroup: unknown option '-f'");
        starts(
            "remove a",
            "cgroup: unknown action 'remove' (expected create, weight, attach, ls or rm)",
        );
        starts("", "cgroup: missing create|weight|attach|ls|rm");
    }
}
