//! Links the kernel with the linker script of the target architecture, which lives
//! beside that architecture's entry code in the `boot` crate.
use std::path::PathBuf;

fn main() {
    let arch = std::env::var("CARGO_CFG_TARGET_ARCH").unwrap();
    let os = std::env::var("CARGO_CFG_TARGET_OS").unwrap_or_default();
    let manifest = PathBuf::from(std::env::var("CARGO_MANIFEST_DIR").unwrap());
    let script = manifest.join("../boot/src").join(&arch).join("linker.ld");
    println!("cargo:rerun-if-changed={}", script.display());
    // Only bare-metal builds are linked with the kernel layout.
    if os == "none" {
        println!("cargo:rustc-link-arg=-T{}", script.display());
    }
}
