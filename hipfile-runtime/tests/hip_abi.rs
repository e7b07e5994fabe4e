//! The HIP 5 ABI that `hipfile_runtime` declares by hand, checked against hip-runtime-sys
//! (bindgen output of HIP's headers) and against Debian's real `libamdhip64.so.5`.
//!
//! hip-runtime-sys links libamdhip64 at link time, which the product must not do, so it is
//! only a reference here: `cargo test -p hipfile-runtime --features hip-abi-check --test hip_abi`
//! with `HIP_PATH=/usr` (as `cargo xtask ci` runs it).
#![cfg(feature = "hip-abi-check")]

use std::mem::{offset_of, size_of};

use hip_runtime_sys as sys;
use hipfile_core::{CopyKind, HipError};
use hipfile_runtime::{Abi, LoadedRuntime, PointerAttributes, memory_type_v5};

#[test]
fn pointer_attributes_match_hip_5() {
    assert_eq!(size_of::<PointerAttributes>(), size_of::<sys::hipPointerAttribute_t>());
    assert_eq!(offset_of!(PointerAttributes, memory_type), offset_of!(sys::hipPointerAttribute_t, memoryType));
    assert_eq!(offset_of!(PointerAttributes, device), offset_of!(sys::hipPointerAttribute_t, device));
    assert_eq!(offset_of!(PointerAttributes, device_pointer), offset_of!(sys::hipPointerAttribute_t, devicePointer));
    assert_eq!(offset_of!(PointerAttributes, host_pointer), offset_of!(sys::hipPointerAttribute_t, hostPointer));
    assert_eq!(offset_of!(PointerAttributes, is_managed), offset_of!(sys::hipPointerAttribute_t, isManaged));
    assert_eq!(
        offset_of!(PointerAttributes, allocation_flags),
        offset_of!(sys::hipPointerAttribute_t, allocationFlags)
    );
    assert_eq!(size_of::<sys::hipMemoryType>(), size_of::<i32>());
}

#[test]
fn enum_values_match_hip_5() {
    assert_eq!(sys::hipMemoryType::hipMemoryTypeHost as i32, memory_type_v5::HOST);
    assert_eq!(sys::hipMemoryType::hipMemoryTypeDevice as i32, memory_type_v5::DEVICE);
    assert_eq!(sys::hipMemoryType::hipMemoryTypeArray as i32, memory_type_v5::ARRAY);
    assert_eq!(sys::hipMemoryType::hipMemoryTypeUnified as i32, memory_type_v5::UNIFIED);
    assert_eq!(sys::hipMemcpyKind::hipMemcpyHostToHost as i32, CopyKind::HostToHost as i32);
    assert_eq!(sys::hipMemcpyKind::hipMemcpyHostToDevice as i32, CopyKind::HostToDevice as i32);
    assert_eq!(sys::hipMemcpyKind::hipMemcpyDeviceToHost as i32, CopyKind::DeviceToHost as i32);
    assert_eq!(sys::hipMemcpyKind::hipMemcpyDeviceToDevice as i32, CopyKind::DeviceToDevice as i32);
    assert_eq!(sys::hipMemcpyKind::hipMemcpyDefault as i32, CopyKind::Default as i32);
    for (ours, theirs) in [
        (HipError::INVALID_VALUE, sys::hipError_t::hipErrorInvalidValue),
        (HipError::OUT_OF_MEMORY, sys::hipError_t::hipErrorOutOfMemory),
        (HipError::NOT_INITIALIZED, sys::hipError_t::hipErrorNotInitialized),
        (HipError::INVALID_DEVICE_POINTER, sys::hipError_t::hipErrorInvalidDevicePointer),
        (HipError::NO_DEVICE, sys::hipError_t::hipErrorNoDevice),
        (HipError::INVALID_DEVICE, sys::hipError_t::hipErrorInvalidDevice),
        (HipError::INVALID_HANDLE, sys::hipError_t::hipErrorInvalidHandle),
        (HipError::NOT_FOUND, sys::hipError_t::hipErrorNotFound),
        (HipError::NOT_READY, sys::hipError_t::hipErrorNotReady),
        (HipError::LAUNCH_FAILURE, sys::hipError_t::hipErrorLaunchFailure),
        (HipError::UNKNOWN, sys::hipError_t::hipErrorUnknown),
    ] {
        assert_eq!(ours.0, theirs as i32, "{theirs:?}");
    }
}

#[test]
fn the_loader_reads_the_same_version_as_a_linked_call() {
    let mut linked = 0;
    // SAFETY: a plain call into the linked runtime with a writable output.
    let rc = unsafe { sys::hipRuntimeGetVersion(&mut linked) };
    assert_eq!(rc, sys::hipError_t::hipSuccess);
    let loaded = LoadedRuntime::open("libamdhip64.so.5").expect("Debian's libamdhip64.so.5");
    assert_eq!(loaded.version(), linked);
    assert_eq!(loaded.abi(), Abi::V5);
}

#[test]
fn device_properties_match_hip_5() {
    use hipfile_runtime::DeviceProp as P;
    use sys::hipDeviceProp_t as S;
    assert_eq!(size_of::<P>(), size_of::<S>());
    assert_eq!(size_of::<sys::hipDeviceArch_t>(), size_of::<u32>());
    macro_rules! same {
        ($($ours:ident = $theirs:ident),* $(,)?) => {
            $(assert_eq!(offset_of!(P, $ours), offset_of!(S, $theirs), stringify!($theirs));)*
        };
    }
    same!(
        name = name,
        total_global_mem = totalGlobalMem,
        shared_mem_per_block = sharedMemPerBlock,
        regs_per_block = regsPerBlock,
        warp_size = warpSize,
        max_threads_per_block = maxThreadsPerBlock,
        max_threads_dim = maxThreadsDim,
        max_grid_size = maxGridSize,
        clock_rate = clockRate,
        memory_clock_rate = memoryClockRate,
        memory_bus_width = memoryBusWidth,
        total_const_mem = totalConstMem,
        major = major,
        minor = minor,
        multi_processor_count = multiProcessorCount,
        l2_cache_size = l2CacheSize,
        max_threads_per_multi_processor = maxThreadsPerMultiProcessor,
        compute_mode = computeMode,
        clock_instruction_rate = clockInstructionRate,
        arch = arch,
        concurrent_kernels = concurrentKernels,
        pci_domain_id = pciDomainID,
        pci_bus_id = pciBusID,
        pci_device_id = pciDeviceID,
        max_shared_memory_per_multi_processor = maxSharedMemoryPerMultiProcessor,
        is_multi_gpu_board = isMultiGpuBoard,
        can_map_host_memory = canMapHostMemory,
        gcn_arch = gcnArch,
        gcn_arch_name = gcnArchName,
        integrated = integrated,
        cooperative_launch = cooperativeLaunch,
        cooperative_multi_device_launch = cooperativeMultiDeviceLaunch,
        max_texture_1d_linear = maxTexture1DLinear,
        max_texture_1d = maxTexture1D,
        max_texture_2d = maxTexture2D,
        max_texture_3d = maxTexture3D,
        hdp_mem_flush_cntl = hdpMemFlushCntl,
        hdp_reg_flush_cntl = hdpRegFlushCntl,
        mem_pitch = memPitch,
        texture_alignment = textureAlignment,
        texture_pitch_alignment = texturePitchAlignment,
        kernel_exec_timeout_enabled = kernelExecTimeoutEnabled,
        ecc_enabled = ECCEnabled,
        tcc_driver = tccDriver,
        cooperative_multi_device_unmatched_func = cooperativeMultiDeviceUnmatchedFunc,
        cooperative_multi_device_unmatched_grid_dim = cooperativeMultiDeviceUnmatchedGridDim,
        cooperative_multi_device_unmatched_block_dim = cooperativeMultiDeviceUnmatchedBlockDim,
        cooperative_multi_device_unmatched_shared_mem = cooperativeMultiDeviceUnmatchedSharedMem,
        is_large_bar = isLargeBar,
        asic_revision = asicRevision,
        managed_memory = managedMemory,
        direct_managed_mem_access_from_host = directManagedMemAccessFromHost,
        concurrent_managed_access = concurrentManagedAccess,
        pageable_memory_access = pageableMemoryAccess,
        pageable_memory_access_uses_host_page_tables = pageableMemoryAccessUsesHostPageTables,
    );
}

#[test]
fn device_attribute_numbers_match_hip_5() {
    use hipfile_runtime::device_attribute_v5 as a;
    use sys::hipDeviceAttribute_t as S;
    for (ours, theirs) in [
        (a::ECC_ENABLED, S::hipDeviceAttributeEccEnabled),
        (a::CAN_MAP_HOST_MEMORY, S::hipDeviceAttributeCanMapHostMemory),
        (a::CLOCK_RATE, S::hipDeviceAttributeClockRate),
        (a::COMPUTE_MODE, S::hipDeviceAttributeComputeMode),
        (a::CONCURRENT_KERNELS, S::hipDeviceAttributeConcurrentKernels),
        (a::CONCURRENT_MANAGED_ACCESS, S::hipDeviceAttributeConcurrentManagedAccess),
        (a::COOPERATIVE_LAUNCH, S::hipDeviceAttributeCooperativeLaunch),
        (a::COOPERATIVE_MULTI_DEVICE_LAUNCH, S::hipDeviceAttributeCooperativeMultiDeviceLaunch),
        (a::DIRECT_MANAGED_MEM_ACCESS_FROM_HOST, S::hipDeviceAttributeDirectManagedMemAccessFromHost),
        (a::INTEGRATED, S::hipDeviceAttributeIntegrated),
        (a::IS_MULTI_GPU_BOARD, S::hipDeviceAttributeIsMultiGpuBoard),
        (a::KERNEL_EXEC_TIMEOUT, S::hipDeviceAttributeKernelExecTimeout),
        (a::L2_CACHE_SIZE, S::hipDeviceAttributeL2CacheSize),
        (a::COMPUTE_CAPABILITY_MAJOR, S::hipDeviceAttributeComputeCapabilityMajor),
        (a::MANAGED_MEMORY, S::hipDeviceAttributeManagedMemory),
        (a::MAX_BLOCK_DIM_X, S::hipDeviceAttributeMaxBlockDimX),
        (a::MAX_BLOCK_DIM_Y, S::hipDeviceAttributeMaxBlockDimY),
        (a::MAX_BLOCK_DIM_Z, S::hipDeviceAttributeMaxBlockDimZ),
        (a::MAX_GRID_DIM_X, S::hipDeviceAttributeMaxGridDimX),
        (a::MAX_GRID_DIM_Y, S::hipDeviceAttributeMaxGridDimY),
        (a::MAX_GRID_DIM_Z, S::hipDeviceAttributeMaxGridDimZ),
        (a::MAX_THREADS_PER_BLOCK, S::hipDeviceAttributeMaxThreadsPerBlock),
        (a::MAX_THREADS_PER_MULTI_PROCESSOR, S::hipDeviceAttributeMaxThreadsPerMultiProcessor),
        (a::MEMORY_BUS_WIDTH, S::hipDeviceAttributeMemoryBusWidth),
        (a::MEMORY_CLOCK_RATE, S::hipDeviceAttributeMemoryClockRate),
        (a::COMPUTE_CAPABILITY_MINOR, S::hipDeviceAttributeComputeCapabilityMinor),
        (a::MULTIPROCESSOR_COUNT, S::hipDeviceAttributeMultiprocessorCount),
        (a::PAGEABLE_MEMORY_ACCESS, S::hipDeviceAttributePageableMemoryAccess),
        (a::PAGEABLE_MEMORY_ACCESS_USES_HOST_PAGE_TABLES, S::hipDeviceAttributePageableMemoryAccessUsesHostPageTables),
        (a::PCI_BUS_ID, S::hipDeviceAttributePciBusId),
        (a::PCI_DEVICE_ID, S::hipDeviceAttributePciDeviceId),
        (a::PCI_DOMAIN_ID, S::hipDeviceAttributePciDomainID),
        (a::MAX_REGISTERS_PER_BLOCK, S::hipDeviceAttributeMaxRegistersPerBlock),
        (a::MAX_SHARED_MEMORY_PER_BLOCK, S::hipDeviceAttributeMaxSharedMemoryPerBlock),
        (a::STREAM_PRIORITIES_SUPPORTED, S::hipDeviceAttributeStreamPrioritiesSupported),
        (a::TCC_DRIVER, S::hipDeviceAttributeTccDriver),
        (a::TOTAL_CONSTANT_MEMORY, S::hipDeviceAttributeTotalConstantMemory),
        (a::UNIFIED_ADDRESSING, S::hipDeviceAttributeUnifiedAddressing),
        (a::WARP_SIZE, S::hipDeviceAttributeWarpSize),
        (a::CLOCK_INSTRUCTION_RATE, S::hipDeviceAttributeClockInstructionRate),
        (a::MAX_SHARED_MEMORY_PER_MULTIPROCESSOR, S::hipDeviceAttributeMaxSharedMemoryPerMultiprocessor),
        (a::GCN_ARCH, S::hipDeviceAttributeGcnArch),
        (a::IS_LARGE_BAR, S::hipDeviceAttributeIsLargeBar),
        (a::ASIC_REVISION, S::hipDeviceAttributeAsicRevision),
        (a::CAN_USE_STREAM_WAIT_VALUE, S::hipDeviceAttributeCanUseStreamWaitValue),
    ] {
        assert_eq!(ours, theirs as i32, "{theirs:?}");
    }
}
