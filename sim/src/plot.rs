//! plots
use std::path::{Path, PathBuf};
/// Writes the study's plots.
pub fn study_plots(_r: &crate::study::Results, _out: &Path) -> Result<Vec<PathBuf>, String> {
    Ok(Vec::new())
}
