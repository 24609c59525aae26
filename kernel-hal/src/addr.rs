//! [`PhysAddr`] and [`VirtAddr`]: addresses as types, so a physical address
//! cannot be passed where a virtual one is wanted (the page-table calls
//! take both), and a stack top or an MMIO base is not mistaken for a length.
//! Plain values: making one is safe; what is mapped where is the business
//! of the calls that take them (reading through one is `unsafe` there).
//!
//! Arithmetic cannot wrap silently: `addr + bytes` and `addr - bytes` are
//! addresses and panic on overflow in every build (release builds do not
//! check integer overflow), `checked_add` / `checked_sub` / `align_up` say
//! `None` instead. A physical address is below 2^52 ([`PhysAddr::MAX_BITS`],
//! the architectural limit of both x86_64 and aarch64): `PhysAddr::new`
//! panics beyond it, `PhysAddr::try_new` says `None`. A virtual address is
//! any pointer-sized value (a fault address is reported as the CPU gave it).
//!
//! Both are a `usize` underneath (`#[repr(transparent)]`: the kernel runs on
//! 64-bit CPUs only, and a register or an `extern "C"` argument holds one
//! as is); `as_u64` is for page-table entries and registers. The kernel
//! maps RAM at its physical address on both arches (the identity map):
//! [`PhysAddr::identity_virt`] and [`VirtAddr::identity_phys`] are that
//! assumption, in one place.

use core::fmt;

macro_rules! address {
    ($(#[$doc:meta])* $name:ident) => {
        $(#[$doc])*
        #[derive(Clone, Copy, Default, PartialEq, Eq, PartialOrd, Ord, Hash)]
        #[repr(transparent)]
        pub struct $name(usize);

        impl $name {
            /// The address `0`.
            pub const ZERO: Self = $name(0);

            /// The address as a number.
            #[inline]
            pub const fn as_usize(self) -> usize {
                self.0
            }

            /// The address as a `u64` (a page-table entry's or a register's
            /// width).
            #[inline]
            pub const fn as_u64(self) -> u64 {
                self.0 as u64
            }

            /// The address `bytes` above this one, or `None` past the end
            /// of the address space.
            #[inline]
            pub const fn checked_add(self, bytes: usize) -> Option<Self> {
                match self.0.checked_add(bytes) {
                    Some(a) => Self::try_new(a),
                    None => None,
                }
            }

            /// The address `bytes` below this one, or `None` below 0.
            #[inline]
            pub const fn checked_sub(self, bytes: usize) -> Option<Self> {
                match self.0.checked_sub(bytes) {
                    Some(a) => Some($name(a)),
                    None => None,
                }
            }

            /// The address `bytes` above this one, or [`MAX`](Self::MAX)
            /// if that is past the end of the address space (a range's end
            /// from a firmware table, clamped as the code before it did).
            #[inline]
            pub const fn saturating_add(self, bytes: usize) -> Self {
                match self.checked_add(bytes) {
                    Some(a) => a,
                    None => Self::MAX,
                }
            }

            /// Bytes from `base` up to this address, if it is not below it.
            #[inline]
            pub const fn offset_from(self, base: Self) -> Option<usize> {
                self.0.checked_sub(base.0)
            }

            /// Whether the address is a multiple of `align` (a power of two).
            #[inline]
            pub const fn is_aligned(self, align: usize) -> bool {
                assert!(align.is_power_of_two(), "alignment not a power of two");
                self.0 & (align - 1) == 0
            }

            /// The address rounded down to a multiple of `align` (a power
            /// of two).
            #[inline]
            pub const fn align_down(self, align: usize) -> Self {
                assert!(align.is_power_of_two(), "alignment not a power of two");
                $name(self.0 & !(align - 1))
            }

            /// The address rounded up to a multiple of `align` (a power of
            /// two), or `None` if that is past the end of the address space.
            #[inline]
            pub const fn align_up(self, align: usize) -> Option<Self> {
                assert!(align.is_power_of_two(), "alignment not a power of two");
                match self.0.checked_add(align - 1) {
                    Some(a) => Self::try_new(a & !(align - 1)),
                    None => None,
                }
            }
        }

        impl core::ops::Add<usize> for $name {
            type Output = $name;
            /// Panics past the end of the address space (in every build).
            #[inline]
            #[track_caller]
            fn add(self, bytes: usize) -> $name {
                match self.checked_add(bytes) {
                    Some(a) => a,
                    None => panic!(concat!(stringify!($name), " + bytes overflows")),
                }
            }
        }

        impl core::ops::AddAssign<usize> for $name {
            #[inline]
            #[track_caller]
            fn add_assign(&mut self, bytes: usize) {
                *self = *self + bytes;
            }
        }

        impl core::ops::Sub<usize> for $name {
            type Output = $name;
            /// Panics below 0 (in every build).
            #[inline]
            #[track_caller]
            fn sub(self, bytes: usize) -> $name {
                match self.checked_sub(bytes) {
                    Some(a) => a,
                    None => panic!(concat!(stringify!($name), " - bytes underflows")),
                }
            }
        }

        impl core::ops::SubAssign<usize> for $name {
            #[inline]
            #[track_caller]
            fn sub_assign(&mut self, bytes: usize) {
                *self = *self - bytes;
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
    /// A physical memory address (what the page tables map to, where a
    /// device's registers or a firmware table are): below 2^52.
    PhysAddr
);
address!(
    /// A virtual address in the kernel's address space (what code and data
    /// pointers hold: a stack top, a fault address, a page to map).
    VirtAddr
);

impl PhysAddr {
    /// Physical addresses have at most this many bits: 52 on both arches
    /// (x86_64's MAXPHYADDR limit, aarch64's with FEAT_LPA).
    pub const MAX_BITS: u32 = 52;

    /// The highest physical address, 2^52 - 1.
    pub const MAX: Self = PhysAddr((1 << Self::MAX_BITS) - 1);

    /// The physical address `addr`; panics if it has more than
    /// [`MAX_BITS`](Self::MAX_BITS) bits (use [`try_new`](Self::try_new) for
    /// a number from outside).
    #[inline]
    #[track_caller]
    pub const fn new(addr: usize) -> Self {
        match Self::try_new(addr) {
            Some(a) => a,
            None => panic!("physical address beyond 52 bits"),
        }
    }

    /// The physical address `addr`, or `None` if it has more than
    /// [`MAX_BITS`](Self::MAX_BITS) bits.
    #[inline]
    pub const fn try_new(addr: usize) -> Option<Self> {
        if addr >> Self::MAX_BITS == 0 {
            Some(PhysAddr(addr))
        } else {
            None
        }
    }

    /// The physical address `addr` (a firmware table's or a page-table
    /// entry's 64 bits), or `None` if it has more than
    /// [`MAX_BITS`](Self::MAX_BITS) bits.
    #[inline]
    pub const fn try_from_u64(addr: u64) -> Option<Self> {
        if addr >> Self::MAX_BITS == 0 {
            Some(PhysAddr(addr as usize))
        } else {
            None
        }
    }

    /// Where the kernel reaches this physical address: the same number (RAM,
    /// MMIO and firmware tables are identity-mapped on both arches).
    #[inline]
    pub const fn identity_virt(self) -> VirtAddr {
        VirtAddr(self.0)
    }
}

impl VirtAddr {
    /// The highest virtual address.
    pub const MAX: Self = VirtAddr(usize::MAX);

    /// The virtual address `addr` (any value: a virtual address has no
    /// invariant the kernel checks).
    #[inline]
    pub const fn new(addr: usize) -> Self {
        VirtAddr(addr)
    }

    /// The same, for the `checked_*` functions the two types share.
    #[inline]
    const fn try_new(addr: usize) -> Option<Self> {
        Some(VirtAddr(addr))
    }

    /// The virtual address `addr` (a register's 64 bits).
    #[inline]
    pub const fn from_u64(addr: u64) -> Self {
        VirtAddr(addr as usize)
    }

    /// The address `ptr` points at.
    #[inline]
    pub fn from_ptr<T: ?Sized>(ptr: *const T) -> Self {
        VirtAddr(ptr.cast::<u8>() as usize)
    }

    /// The address as a pointer (making one is safe; using it is not).
    #[inline]
    pub const fn as_ptr<T>(self) -> *const T {
        self.0 as *const T
    }

    /// The address as a mutable pointer.
    #[inline]
    pub const fn as_mut_ptr<T>(self) -> *mut T {
        self.0 as *mut T
    }

    /// The physical address behind an identity-mapped virtual one (RAM the
    /// kernel reached through the identity map, e.g. a heap page mapped
    /// again as a stack page), or `None` beyond 52 bits.
    #[inline]
    pub const fn identity_phys(self) -> Option<PhysAddr> {
        PhysAddr::try_new(self.0)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn arithmetic_is_checked() {
        let a = VirtAddr::new(0x1000);
        assert_eq!(a + 0x10, VirtAddr::new(0x1010));
        assert_eq!(a - 0x1000, VirtAddr::ZERO);
        assert_eq!(VirtAddr::new(usize::MAX).checked_add(1), None);
        assert_eq!(a.checked_sub(0x1001), None);
        assert_eq!(VirtAddr::new(0x1010).offset_from(a), Some(0x10));
        assert_eq!(a.offset_from(VirtAddr::new(0x1010)), None);
        let mut b = a;
        b += 8;
        b -= 4;
        assert_eq!(b, VirtAddr::new(0x1004));
    }

    #[test]
    #[should_panic(expected = "VirtAddr + bytes overflows")]
    fn add_past_the_end_panics() {
        let _ = VirtAddr::new(usize::MAX - 1) + 2;
    }

    #[test]
    #[should_panic(expected = "PhysAddr - bytes underflows")]
    fn sub_below_zero_panics() {
        let _ = PhysAddr::new(0x10) - 0x11;
    }

    #[test]
    fn physical_addresses_have_52_bits() {
        let top = (1usize << 52) - 1;
        assert_eq!(PhysAddr::try_new(top).map(PhysAddr::as_usize), Some(top));
        assert_eq!(PhysAddr::try_new(top + 1), None);
        assert_eq!(PhysAddr::try_from_u64(1 << 52), None);
        assert_eq!(
            PhysAddr::try_from_u64(0xfee0_0000),
            Some(PhysAddr::new(0xfee0_0000))
        );
        // Arithmetic keeps the invariant: past 2^52 is None / a panic.
        assert_eq!(PhysAddr::new(top).checked_add(1), None);
        assert_eq!(PhysAddr::new(top).align_up(0x1000), None);
        assert_eq!(PhysAddr::MAX, PhysAddr::new(top));
        assert_eq!(PhysAddr::new(top - 1).saturating_add(2), PhysAddr::MAX);
        assert_eq!(
            PhysAddr::new(0x1000).saturating_add(0x10),
            PhysAddr::new(0x1010)
        );
        assert_eq!(
            VirtAddr::new(usize::MAX - 1).saturating_add(2),
            VirtAddr::MAX
        );
    }

    #[test]
    #[should_panic(expected = "physical address beyond 52 bits")]
    fn phys_new_beyond_52_bits_panics() {
        let _ = PhysAddr::new(1 << 52);
    }

    #[test]
    fn alignment() {
        let a = PhysAddr::new(0x1234);
        assert_eq!(a.align_down(0x1000), PhysAddr::new(0x1000));
        assert_eq!(a.align_up(0x1000), Some(PhysAddr::new(0x2000)));
        assert_eq!(
            PhysAddr::new(0x2000).align_up(0x1000),
            Some(PhysAddr::new(0x2000))
        );
        assert!(PhysAddr::new(0x2000).is_aligned(0x1000));
        assert!(!a.is_aligned(0x10));
        assert!(a.is_aligned(4));
        assert_eq!(VirtAddr::new(usize::MAX - 3).align_up(8), None);
    }

    #[test]
    #[should_panic(expected = "alignment not a power of two")]
    fn alignment_must_be_a_power_of_two() {
        let _ = VirtAddr::new(0x1000).align_down(3);
    }

    #[test]
    fn conversions() {
        let x = 0u64;
        let v = VirtAddr::from_ptr(&x);
        assert_eq!(v.as_ptr::<u64>(), &x as *const u64);
        assert_eq!(v.as_u64(), v.as_usize() as u64);
        assert_eq!(
            VirtAddr::from_u64(0xffff_8000_0000_0000).as_u64(),
            0xffff_8000_0000_0000
        );
        assert_eq!(PhysAddr::new(0x4000).identity_virt(), VirtAddr::new(0x4000));
        assert_eq!(
            VirtAddr::new(0x4000).identity_phys(),
            Some(PhysAddr::new(0x4000))
        );
        assert_eq!(VirtAddr::new(0xffff_8000_0000_0000).identity_phys(), None);
    }

    #[test]
    fn debug_prints_hex() {
        extern crate std;
        use std::format;
        assert_eq!(
            format!("{:?}", PhysAddr::new(0xfee0_0000)),
            "PhysAddr(0xfee00000)"
        );
        assert_eq!(
            format!("{:?}", VirtAddr::new(0x80_0000_0000)),
            "VirtAddr(0x8000000000)"
        );
        assert_eq!(format!("{:x}", VirtAddr::new(255)), "ff");
        assert_eq!(format!("{:?}", Some(VirtAddr::ZERO)), "Some(VirtAddr(0x0))");
    }
}
