//! `abtool --compare OLD.csv NEW.csv`: two commits' `samples.csv` side by
//! side (`make bench-compare A B`). For every arch, CPU count, workload and
//! config present in both files, the kernel's mmtests-style table
//! (`shell::compare::write_table`) with OLD as column A and NEW as column B:
//! Amean or Hmean, Stddev, CoV over the kept (non-warmup) runs of every boot,
//! % change with Welch's t-test. Only workload metrics, not the counters.

use std::collections::BTreeMap;
use std::fmt::Write as _;

use shell::compare::{metric_kind, write_table, Series};

/// (arch, cpus, workload, config label).
pub type Key = (String, u32, String, String);
/// Per key: metric name -> kept values, metrics in first-seen order.
pub type Samples = BTreeMap<Key, Vec<(String, Vec<f64>)>>;

/// Splits one CSV line on commas outside double quotes (no escaped quotes:
/// abtool writes none).
fn fields(line: &str) -> Vec<String> {
    let (mut out, mut cur, mut quoted) = (Vec::new(), String::new(), false);
    for c in line.chars() {
        match c {
            '"' => quoted = !quoted,
            ',' if !quoted => out.push(std::mem::take(&mut cur)),
            c => cur.push(c),
        }
    }
    out.push(cur);
    out
}

/// Kept metric samples of a `samples.csv` text.
pub fn parse(text: &str) -> Result<Samples, String> {
    parse_kinds(text, false)
}

/// Kept samples of a `samples.csv` text: metrics, and with `counters` the
/// mechanism counters too (after the metrics of their key).
pub fn parse_kinds(text: &str, counters: bool) -> Result<Samples, String> {
    let mut lines = text.lines();
    let head = lines.next().unwrap_or("");
    if head != "arch,cpus,seed,workload,config,label,run,warmup,kind,name,value" {
        return Err(format!("not an abtool samples.csv (header '{head}')"));
    }
    let mut out: Samples = BTreeMap::new();
    for (i, line) in lines.enumerate() {
        let f = fields(line);
        let bad = || format!("line {}: '{line}'", i + 2);
        if f.len() != 11 {
            return Err(bad());
        }
        if f[7] != "false" || !(f[8] == "metric" || counters && f[8] == "counter") {
            continue;
        }
        let cpus = f[1].parse().map_err(|_| bad())?;
        let v: f64 = f[10].parse().map_err(|_| bad())?;
        let key = (f[0].clone(), cpus, f[3].clone(), f[5].clone());
        let ms = out.entry(key).or_default();
        match ms.iter_mut().find(|(n, _)| *n == f[9]) {
            Some((_, vs)) => vs.push(v),
            None => ms.push((f[9].clone(), vec![v])),
        }
    }
    Ok(out)
}

/// The tables of `old` against `new` (`names`: the two column labels).
pub fn tables(old: &Samples, new: &Samples, names: [&str; 2]) -> String {
    let mut s = String::new();
    for (key, oms) in old {
        let Some(nms) = new.get(key) else {
            let _ = writeln!(s, "== {} ({}): only in {}\n", key.2, key.3, names[0]);
            continue;
        };
        let (arch, cpus, w, label) = key;
        let _ = writeln!(s, "== {w} [{label}] on {arch}, {cpus} CPU(s)");
        let pairs: Vec<(&str, [&[f64]; 2])> = oms
            .iter()
            .filter_map(|(m, ov)| {
                let nv = nms.iter().find(|(n, _)| n == m)?;
                Some((m.as_str(), [ov.as_slice(), nv.1.as_slice()]))
            })
            .collect();
        let series: Vec<Series<'_>> = pairs
            .iter()
            .map(|(m, v)| Series {
                name: m,
                kind: metric_kind(m),
                samples: v,
            })
            .collect();
        let _ = write_table(&mut s, &names, &series);
        s.push('\n');
    }
    for key in new.keys().filter(|k| !old.contains_key(*k)) {
        let _ = writeln!(s, "== {} ({}): only in {}\n", key.2, key.3, names[1]);
    }
    s
}

#[cfg(test)]
mod tests {
    use super::*;

    const HEAD: &str = "arch,cpus,seed,workload,config,label,run,warmup,kind,name,value\n";

    #[test]
    fn pairs_configs_and_drops_warmups_and_counters() {
        let old = format!(
            "{HEAD}x86_64,2,1,\"perfpipe -l 5\",0,\"preempt=none,NEXT_BUDDY\",1,true,metric,usecs_per_op,99\n\
             x86_64,2,1,\"perfpipe -l 5\",0,\"preempt=none,NEXT_BUDDY\",2,false,metric,usecs_per_op,10\n\
             x86_64,2,1,\"perfpipe -l 5\",0,\"preempt=none,NEXT_BUDDY\",2,false,counter,switches,4\n\
             x86_64,2,2,\"perfpipe -l 5\",0,\"preempt=none,NEXT_BUDDY\",3,false,metric,usecs_per_op,12\n\
             x86_64,2,1,\"yield -l 5\",0,\"preempt=full\",2,false,metric,nsecs_per_yield,7\n"
        );
        let new = format!(
            "{HEAD}x86_64,2,1,\"perfpipe -l 5\",0,\"preempt=none,NEXT_BUDDY\",2,false,metric,usecs_per_op,5\n\
             x86_64,2,2,\"perfpipe -l 5\",0,\"preempt=none,NEXT_BUDDY\",3,false,metric,usecs_per_op,7\n"
        );
        let (o, n) = (parse(&old).unwrap(), parse(&new).unwrap());
        let k = (
            "x86_64".to_string(),
            2,
            "perfpipe -l 5".to_string(),
            "preempt=none,NEXT_BUDDY".to_string(),
        );
        assert_eq!(o[&k], vec![("usecs_per_op".to_string(), vec![10.0, 12.0])]);
        let t = tables(&o, &n, ["abc1234", "def5678"]);
        assert!(
            t.contains("== perfpipe -l 5 [preempt=none,NEXT_BUDDY] on x86_64, 2 CPU(s)"),
            "{t}"
        );
        assert!(t.contains("A:abc1234"), "{t}");
        // Amean 11 -> 6: 45.45 % better (lower is better).
        assert!(t.contains("Amean   usecs_per_op"), "{t}");
        assert!(t.contains("11.0000"), "{t}");
        assert!(t.contains("6.0000"), "{t}");
        assert!(t.contains("45.45%"), "{t}");
        // Its 95% interval (means 11 and 6, s^2 = 2 on both sides, n = 2:
        // df 2, t = 4.302653; Fieller's rho in [0.14993, 1.13803]) holds 0,
        // as the mean is not marked: p = 0.072.
        assert!(
            t.contains(&format!(
                "\nCI95    usecs_per_op{:>52}\n",
                "[-13.80, +85.01]%"
            )),
            "{t}"
        );
        assert!(t.contains("CI95: 95% confidence interval"), "{t}");
        assert!(!t.contains("switches"), "{t}");
        assert!(
            t.contains("== yield -l 5 (preempt=full): only in abc1234"),
            "{t}"
        );
    }

    #[test]
    fn refuses_other_files() {
        assert!(parse("a,b\n1,2\n").is_err());
        assert!(parse(&format!("{HEAD}x86_64,two,1,w,0,l,1,false,metric,m,1\n")).is_err());
        assert!(parse(&format!("{HEAD}x86_64,2,1\n")).is_err());
    }
}
