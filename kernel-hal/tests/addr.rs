//! Host tests of `kernel_hal::addr` (`PhysAddr`, `VirtAddr`): the module is
//! plain, arch-neutral code, compiled here on its own, since the library's
//! own test build would install its kernel heap as the host allocator.

#[allow(dead_code)] // what only the kernel uses
#[path = "../src/addr.rs"]
mod addr;
