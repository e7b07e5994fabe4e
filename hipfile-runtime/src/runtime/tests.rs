//! Tests of [`super`] (`runtime.rs`).

use super::*;

fn attr(memory_type: i32, is_managed: i32) -> PointerAttributes {
    PointerAttributes { memory_type, is_managed, ..PointerAttributes::default() }
}

#[test]
fn abi_follows_the_major_version() {
    assert_eq!(Abi::from_version(50221153), Abi::V5);
    assert_eq!(Abi::from_version(60032830), Abi::V6);
    assert_eq!(Abi::from_version(70253211), Abi::V6);
}

#[test]
fn memory_types_are_read_in_the_runtimes_numbering() {
    use MemoryType::*;
    // The same raw value means different things before and after HIP 6.
    assert_eq!(Abi::V5.memory_type(&attr(1, 0)), Device);
    assert_eq!(Abi::V6.memory_type(&attr(1, 0)), Host);
    assert_eq!(Abi::V5.memory_type(&attr(0, 0)), Host);
    assert_eq!(Abi::V6.memory_type(&attr(0, 0)), Unregistered);
    assert_eq!(Abi::V6.memory_type(&attr(2, 0)), Device);
    assert_eq!(Abi::V5.memory_type(&attr(2, 0)), Unregistered); // array
    assert_eq!(Abi::V6.memory_type(&attr(10, 0)), Unregistered); // array
    assert_eq!(Abi::V5.memory_type(&attr(3, 0)), Managed);
    assert_eq!(Abi::V6.memory_type(&attr(3, 0)), Managed);
    assert_eq!(Abi::V6.memory_type(&attr(11, 0)), Managed);
    // HIP 5 reports managed memory as device memory with `isManaged`.
    assert_eq!(Abi::V5.memory_type(&attr(1, 1)), Managed);
    assert_eq!(Abi::V6.memory_type(&attr(77, 0)), Unregistered);
}

#[test]
fn pointer_attributes_have_the_c_layout() {
    assert_eq!(std::mem::size_of::<PointerAttributes>(), 32);
    assert_eq!(std::mem::offset_of!(PointerAttributes, device_pointer), 8);
    assert_eq!(std::mem::offset_of!(PointerAttributes, is_managed), 24);
    assert_eq!(std::mem::offset_of!(PointerAttributes, allocation_flags), 28);
}

#[test]
fn a_missing_library_is_an_error_naming_it() {
    let err = LoadedRuntime::open("libhipfile-no-such-runtime.so").unwrap_err();
    assert!(err.0.contains("libhipfile-no-such-runtime.so"), "{err}");
}
