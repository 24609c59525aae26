//! The study's score (`sim/src/score.rs`) with machine noise and without,
//! on the scored subset only (the points and configurations the clear
//! rows need, as `sim study --ablation` runs them), one core:
//!
//! ```text
//! cargo run -q -p sim --release --example noise_score -- [OUT_DIR]
//! ```
//!
//! Prints each variant's totals and score table; writes them to OUT_DIR
//! (default `build/study/noise`).

use sim::score::{ablation_study, clear_rows, score, score_table, totals};
use sim::study::{run_study, Study};

fn main() {
    let out = std::path::PathBuf::from(
        std::env::args()
            .nth(1)
            .unwrap_or_else(|| "build/study/noise".into()),
    );
    let rows = clear_rows();
    let st = ablation_study(&Study::default_study(), &rows);
    let mut txt = String::new();
    for (name, off) in [
        ("machine noise", &[][..]),
        ("no machine noise", &["--no-machine-noise"][..]),
    ] {
        let mut s = st.clone();
        s.mechanisms_off = off.to_vec();
        let t0 = std::time::Instant::now();
        let r = run_study(&s, 1, false).unwrap_or_else(|e| {
            sim::errln!("noise_score: {e}");
            std::process::exit(1);
        });
        let sc = score(&rows, &r);
        txt.push_str(&format!(
            "== {name} ({:.0} s wall)\n{}\n{}\n",
            t0.elapsed().as_secs_f64(),
            totals(&sc).line(),
            score_table(&sc)
        ));
        sim::errln!("noise_score: {name} done");
    }
    sim::out!("{txt}");
    std::fs::create_dir_all(&out).expect("out dir");
    std::fs::write(out.join("noise_score.txt"), txt).expect("write");
}
