//! [`PhysAddr`] and [`VirtAddr`]: addresses as types, so a physical address
//! cannot be passed where a virtual one is wanted (the page-table calls
//! take both), and a stack top is not mistaken for a length. Plain values:
//! making one is safe; what is mapped where is the business of the calls
//! that take them. `addr + bytes` and `addr - bytes` are addresses;
//! overflow is a bug (it panics in debug builds, as integer overflow does).

use core::fmt;

macro_rules! address {
    ($(#[$doc:meta])* $name:ident) => {
        $(#[$doc])*
        #[derive(Clone, Copy, Default, PartialEq, Eq, PartialOrd, Ord, Hash)]
        #[repr(transparent)]
        pub struct $name(usize);

        impl $name {
            /// The address `addr`.
            #[inline]
            pub const fn new(addr: usize) -> Self {
                $name(addr)
            }

            /// The address as a number.
            #[inline]
            pub const fn as_usize(self) -> usize {
                self.0
            }

            /// Bytes from `base` up to this address, if it is not below it.
            #[inline]
            pub const fn offset_from(self, base: Self) -> Option<usize> {
                self.0.checked_sub(base.0)
            }

            /// Whether the address is a multiple of `align` (a power of two).
            #[inline]
            pub const fn is_aligned(self, align: usize) -> bool {
                self.0 & (align - 1) == 0
            }

            /// The address rounded down to a multiple of `align` (a power
            /// of two).
            #[inline]
            pub const fn align_down(self, align: usize) -> Self {
                $name(self.0 & !(align - 1))
            }
        }

        impl core::ops::Add<usize> for $name {
            type Output = $name;
            #[inline]
            fn add(self, bytes: usize) -> $name {
                $name(self.0 + bytes)
            }
        }

        impl core::ops::Sub<usize> for $name {
            type Output = $name;
            #[inline]
            fn sub(self, bytes: usize) -> $name {
                $name(self.0 - bytes)
            }
        }

        impl fmt::Debug for $name {
            fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
                write!(f, concat!(stringify!($name), "({:#x})"), self.0)
            }
        }

        impl fmt::LowerHex for $name {
            fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
                fmt::LowerHex::fmt(&self.0, f)
            }
        }
    };
}

address!(
    /// A physical memory address (what the page tables map to).
    PhysAddr
);
address!(
    /// A virtual address in the kernel's address space (what code and data
    /// pointers hold: a stack top, a fault address, a page to map).
    VirtAddr
);
