//! HIP 5.2's device description (Debian 12's headers): `hipDeviceProp_t` and the numbers of
//! `hipDeviceAttribute_t`, as the mock HIP runtime answers `hipGetDeviceProperties` and
//! `hipDeviceGetAttribute` (docs/mockhip.md). `tests/hip_abi.rs` checks both against HIP's
//! header. And HIP 6's description, `hipDeviceProp_tR0600`, for programs built with HIP 6's
//! headers (CI has no HIP 6 header to check it against: its size and field offsets, measured
//! with ROCm 6.3's header, are checked below).

use std::ffi::{c_char, c_int, c_uint};

/// `hipDeviceProp_t` of HIP 5.2, field for field.
#[repr(C)]
#[derive(Clone, Copy, Debug)]
#[allow(missing_docs)] // each field is the header's of the same name, in snake case
pub struct DeviceProp {
    pub name: [c_char; 256],
    pub total_global_mem: usize,
    pub shared_mem_per_block: usize,
    pub regs_per_block: c_int,
    pub warp_size: c_int,
    pub max_threads_per_block: c_int,
    pub max_threads_dim: [c_int; 3],
    pub max_grid_size: [c_int; 3],
    pub clock_rate: c_int,
    pub memory_clock_rate: c_int,
    pub memory_bus_width: c_int,
    pub total_const_mem: usize,
    pub major: c_int,
    pub minor: c_int,
    pub multi_processor_count: c_int,
    pub l2_cache_size: c_int,
    pub max_threads_per_multi_processor: c_int,
    pub compute_mode: c_int,
    pub clock_instruction_rate: c_int,
    /// `hipDeviceArch_t`: one-bit feature fields in one 32-bit word.
    pub arch: c_uint,
    pub concurrent_kernels: c_int,
    pub pci_domain_id: c_int,
    pub pci_bus_id: c_int,
    pub pci_device_id: c_int,
    pub max_shared_memory_per_multi_processor: usize,
    pub is_multi_gpu_board: c_int,
    pub can_map_host_memory: c_int,
    pub gcn_arch: c_int,
    pub gcn_arch_name: [c_char; 256],
    pub integrated: c_int,
    pub cooperative_launch: c_int,
    pub cooperative_multi_device_launch: c_int,
    pub max_texture_1d_linear: c_int,
    pub max_texture_1d: c_int,
    pub max_texture_2d: [c_int; 2],
    pub max_texture_3d: [c_int; 3],
    pub hdp_mem_flush_cntl: *mut c_uint,
    pub hdp_reg_flush_cntl: *mut c_uint,
    pub mem_pitch: usize,
    pub texture_alignment: usize,
    pub texture_pitch_alignment: usize,
    pub kernel_exec_timeout_enabled: c_int,
    pub ecc_enabled: c_int,
    pub tcc_driver: c_int,
    pub cooperative_multi_device_unmatched_func: c_int,
    pub cooperative_multi_device_unmatched_grid_dim: c_int,
    pub cooperative_multi_device_unmatched_block_dim: c_int,
    pub cooperative_multi_device_unmatched_shared_mem: c_int,
    pub is_large_bar: c_int,
    pub asic_revision: c_int,
    pub managed_memory: c_int,
    pub direct_managed_mem_access_from_host: c_int,
    pub concurrent_managed_access: c_int,
    pub pageable_memory_access: c_int,
    pub pageable_memory_access_uses_host_page_tables: c_int,
}

/// `hipDeviceProp_tR0600` of HIP 6 (what `hipGetDevicePropertiesR0600` fills, the name HIP 6's
/// headers give `hipGetDeviceProperties`), field for field: 1472 bytes.
#[repr(C)]
#[derive(Clone, Copy, Debug)]
#[allow(missing_docs)] // each field is the header's of the same name, in snake case
pub struct DevicePropR0600 {
    pub name: [c_char; 256],
    pub uuid: [c_char; 16],
    pub luid: [c_char; 8],
    pub luid_device_node_mask: c_uint,
    pub total_global_mem: usize,
    pub shared_mem_per_block: usize,
    pub regs_per_block: c_int,
    pub warp_size: c_int,
    pub mem_pitch: usize,
    pub max_threads_per_block: c_int,
    pub max_threads_dim: [c_int; 3],
    pub max_grid_size: [c_int; 3],
    pub clock_rate: c_int,
    pub total_const_mem: usize,
    pub major: c_int,
    pub minor: c_int,
    pub texture_alignment: usize,
    pub texture_pitch_alignment: usize,
    pub device_overlap: c_int,
    pub multi_processor_count: c_int,
    pub kernel_exec_timeout_enabled: c_int,
    pub integrated: c_int,
    pub can_map_host_memory: c_int,
    pub compute_mode: c_int,
    pub max_texture_1d: c_int,
    pub max_texture_1d_mipmap: c_int,
    pub max_texture_1d_linear: c_int,
    pub max_texture_2d: [c_int; 2],
    pub max_texture_2d_mipmap: [c_int; 2],
    pub max_texture_2d_linear: [c_int; 3],
    pub max_texture_2d_gather: [c_int; 2],
    pub max_texture_3d: [c_int; 3],
    pub max_texture_3d_alt: [c_int; 3],
    pub max_texture_cubemap: c_int,
    pub max_texture_1d_layered: [c_int; 2],
    pub max_texture_2d_layered: [c_int; 3],
    pub max_texture_cubemap_layered: [c_int; 2],
    pub max_surface_1d: c_int,
    pub max_surface_2d: [c_int; 2],
    pub max_surface_3d: [c_int; 3],
    pub max_surface_1d_layered: [c_int; 2],
    pub max_surface_2d_layered: [c_int; 3],
    pub max_surface_cubemap: c_int,
    pub max_surface_cubemap_layered: [c_int; 2],
    pub surface_alignment: usize,
    pub concurrent_kernels: c_int,
    pub ecc_enabled: c_int,
    pub pci_bus_id: c_int,
    pub pci_device_id: c_int,
    pub pci_domain_id: c_int,
    pub tcc_driver: c_int,
    pub async_engine_count: c_int,
    pub unified_addressing: c_int,
    pub memory_clock_rate: c_int,
    pub memory_bus_width: c_int,
    pub l2_cache_size: c_int,
    pub persisting_l2_cache_max_size: c_int,
    pub max_threads_per_multi_processor: c_int,
    pub stream_priorities_supported: c_int,
    pub global_l1_cache_supported: c_int,
    pub local_l1_cache_supported: c_int,
    pub shared_mem_per_multiprocessor: usize,
    pub regs_per_multiprocessor: c_int,
    pub managed_memory: c_int,
    pub is_multi_gpu_board: c_int,
    pub multi_gpu_board_group_id: c_int,
    pub host_native_atomic_supported: c_int,
    pub single_to_double_precision_perf_ratio: c_int,
    pub pageable_memory_access: c_int,
    pub concurrent_managed_access: c_int,
    pub compute_preemption_supported: c_int,
    pub can_use_host_pointer_for_registered_mem: c_int,
    pub cooperative_launch: c_int,
    pub cooperative_multi_device_launch: c_int,
    pub shared_mem_per_block_optin: usize,
    pub pageable_memory_access_uses_host_page_tables: c_int,
    pub direct_managed_mem_access_from_host: c_int,
    pub max_blocks_per_multi_processor: c_int,
    pub access_policy_max_window_size: c_int,
    pub reserved_shared_mem_per_block: usize,
    pub host_register_supported: c_int,
    pub sparse_hip_array_supported: c_int,
    pub host_register_read_only_supported: c_int,
    pub timeline_semaphore_interop_supported: c_int,
    pub memory_pools_supported: c_int,
    pub gpu_direct_rdma_supported: c_int,
    pub gpu_direct_rdma_flush_writes_options: c_uint,
    pub gpu_direct_rdma_writes_ordering: c_int,
    pub memory_pool_supported_handle_types: c_uint,
    pub deferred_mapping_hip_array_supported: c_int,
    pub ipc_event_supported: c_int,
    pub cluster_launch: c_int,
    pub unified_function_pointers: c_int,
    pub reserved: [c_int; 63],
    pub hip_reserved: [c_int; 32],
    pub gcn_arch_name: [c_char; 256],
    pub max_shared_memory_per_multi_processor: usize,
    pub clock_instruction_rate: c_int,
    pub arch: c_uint,
    pub hdp_mem_flush_cntl: *mut c_uint,
    pub hdp_reg_flush_cntl: *mut c_uint,
    pub cooperative_multi_device_unmatched_func: c_int,
    pub cooperative_multi_device_unmatched_grid_dim: c_int,
    pub cooperative_multi_device_unmatched_block_dim: c_int,
    pub cooperative_multi_device_unmatched_shared_mem: c_int,
    pub is_large_bar: c_int,
    pub asic_revision: c_int,
}

impl From<&DeviceProp> for DevicePropR0600 {
    /// The same device in HIP 6's layout: the fields both have carried over, HIP 6's new ones
    /// those of a discrete GPU without textures' extra limits or the CUDA-only features.
    fn from(p: &DeviceProp) -> Self {
        DevicePropR0600 {
            name: p.name,
            uuid: [0; 16],
            luid: [0; 8],
            luid_device_node_mask: 0,
            total_global_mem: p.total_global_mem,
            shared_mem_per_block: p.shared_mem_per_block,
            regs_per_block: p.regs_per_block,
            warp_size: p.warp_size,
            mem_pitch: p.mem_pitch,
            max_threads_per_block: p.max_threads_per_block,
            max_threads_dim: p.max_threads_dim,
            max_grid_size: p.max_grid_size,
            clock_rate: p.clock_rate,
            total_const_mem: p.total_const_mem,
            major: p.major,
            minor: p.minor,
            texture_alignment: p.texture_alignment,
            texture_pitch_alignment: p.texture_pitch_alignment,
            device_overlap: 1,
            multi_processor_count: p.multi_processor_count,
            kernel_exec_timeout_enabled: p.kernel_exec_timeout_enabled,
            integrated: p.integrated,
            can_map_host_memory: p.can_map_host_memory,
            compute_mode: p.compute_mode,
            max_texture_1d: p.max_texture_1d,
            max_texture_1d_mipmap: p.max_texture_1d,
            max_texture_1d_linear: p.max_texture_1d_linear,
            max_texture_2d: p.max_texture_2d,
            max_texture_2d_mipmap: p.max_texture_2d,
            max_texture_2d_linear: [p.max_texture_2d[0], p.max_texture_2d[1], p.max_texture_2d[0] * 4],
            max_texture_2d_gather: p.max_texture_2d,
            max_texture_3d: p.max_texture_3d,
            max_texture_3d_alt: p.max_texture_3d,
            max_texture_cubemap: p.max_texture_2d[0],
            max_texture_1d_layered: [p.max_texture_1d, 2048],
            max_texture_2d_layered: [p.max_texture_2d[0], p.max_texture_2d[1], 2048],
            max_texture_cubemap_layered: [p.max_texture_2d[0], 2046],
            max_surface_1d: p.max_texture_1d,
            max_surface_2d: p.max_texture_2d,
            max_surface_3d: p.max_texture_3d,
            max_surface_1d_layered: [p.max_texture_1d, 2048],
            max_surface_2d_layered: [p.max_texture_2d[0], p.max_texture_2d[1], 2048],
            max_surface_cubemap: p.max_texture_2d[0],
            max_surface_cubemap_layered: [p.max_texture_2d[0], 2046],
            surface_alignment: p.texture_alignment,
            concurrent_kernels: p.concurrent_kernels,
            ecc_enabled: p.ecc_enabled,
            pci_bus_id: p.pci_bus_id,
            pci_device_id: p.pci_device_id,
            pci_domain_id: p.pci_domain_id,
            tcc_driver: p.tcc_driver,
            async_engine_count: 2,
            unified_addressing: 1,
            memory_clock_rate: p.memory_clock_rate,
            memory_bus_width: p.memory_bus_width,
            l2_cache_size: p.l2_cache_size,
            persisting_l2_cache_max_size: 0,
            max_threads_per_multi_processor: p.max_threads_per_multi_processor,
            stream_priorities_supported: 1,
            global_l1_cache_supported: 1,
            local_l1_cache_supported: 1,
            shared_mem_per_multiprocessor: p.max_shared_memory_per_multi_processor,
            regs_per_multiprocessor: p.regs_per_block,
            managed_memory: p.managed_memory,
            is_multi_gpu_board: p.is_multi_gpu_board,
            multi_gpu_board_group_id: 0,
            host_native_atomic_supported: 1,
            single_to_double_precision_perf_ratio: 0,
            pageable_memory_access: p.pageable_memory_access,
            concurrent_managed_access: p.concurrent_managed_access,
            compute_preemption_supported: 0,
            can_use_host_pointer_for_registered_mem: 0,
            cooperative_launch: p.cooperative_launch,
            cooperative_multi_device_launch: p.cooperative_multi_device_launch,
            shared_mem_per_block_optin: p.shared_mem_per_block,
            pageable_memory_access_uses_host_page_tables: p.pageable_memory_access_uses_host_page_tables,
            direct_managed_mem_access_from_host: p.direct_managed_mem_access_from_host,
            max_blocks_per_multi_processor: 32,
            access_policy_max_window_size: 0,
            reserved_shared_mem_per_block: 0,
            host_register_supported: 1,
            sparse_hip_array_supported: 0,
            host_register_read_only_supported: 1,
            timeline_semaphore_interop_supported: 0,
            memory_pools_supported: 0,
            gpu_direct_rdma_supported: 0,
            gpu_direct_rdma_flush_writes_options: 0,
            gpu_direct_rdma_writes_ordering: 0,
            memory_pool_supported_handle_types: 0,
            deferred_mapping_hip_array_supported: 0,
            ipc_event_supported: 0,
            cluster_launch: 0,
            unified_function_pointers: 0,
            reserved: [0; 63],
            hip_reserved: [0; 32],
            gcn_arch_name: p.gcn_arch_name,
            max_shared_memory_per_multi_processor: p.max_shared_memory_per_multi_processor,
            clock_instruction_rate: p.clock_instruction_rate,
            arch: p.arch,
            hdp_mem_flush_cntl: p.hdp_mem_flush_cntl,
            hdp_reg_flush_cntl: p.hdp_reg_flush_cntl,
            cooperative_multi_device_unmatched_func: p.cooperative_multi_device_unmatched_func,
            cooperative_multi_device_unmatched_grid_dim: p.cooperative_multi_device_unmatched_grid_dim,
            cooperative_multi_device_unmatched_block_dim: p.cooperative_multi_device_unmatched_block_dim,
            cooperative_multi_device_unmatched_shared_mem: p.cooperative_multi_device_unmatched_shared_mem,
            is_large_bar: p.is_large_bar,
            asic_revision: p.asic_revision,
        }
    }
}

#[cfg(test)]
mod r0600_tests {
    use super::*;

    #[test]
    fn hip_6s_layout_has_its_published_size_and_offsets() {
        // Measured with ROCm 6.3's `hip_runtime_api.h` (`offsetof(hipDeviceProp_t, ...)`).
        use std::mem::offset_of;
        assert_eq!(std::mem::size_of::<DevicePropR0600>(), 1472);
        let offsets = [
            (offset_of!(DevicePropR0600, total_global_mem), 288),
            (offset_of!(DevicePropR0600, warp_size), 308),
            (offset_of!(DevicePropR0600, max_texture_1d), 408),
            (offset_of!(DevicePropR0600, surface_alignment), 568),
            (offset_of!(DevicePropR0600, pci_bus_id), 584),
            (offset_of!(DevicePropR0600, shared_mem_per_multiprocessor), 640),
            (offset_of!(DevicePropR0600, shared_mem_per_block_optin), 696),
            (offset_of!(DevicePropR0600, reserved_shared_mem_per_block), 720),
            (offset_of!(DevicePropR0600, gpu_direct_rdma_flush_writes_options), 752),
            (offset_of!(DevicePropR0600, reserved), 780),
            (offset_of!(DevicePropR0600, hip_reserved), 1032),
            (offset_of!(DevicePropR0600, gcn_arch_name), 1160),
            (offset_of!(DevicePropR0600, max_shared_memory_per_multi_processor), 1416),
            (offset_of!(DevicePropR0600, clock_instruction_rate), 1424),
            (offset_of!(DevicePropR0600, arch), 1428),
            (offset_of!(DevicePropR0600, hdp_mem_flush_cntl), 1432),
            (offset_of!(DevicePropR0600, is_large_bar), 1464),
            (offset_of!(DevicePropR0600, asic_revision), 1468),
        ];
        for (i, (ours, hips)) in offsets.into_iter().enumerate() {
            assert_eq!(ours, hips, "field {i}");
        }
    }
}

/// `hipDeviceAttribute_t` values of HIP 5.2 that the mock answers (the header's names without
/// the `hipDeviceAttribute` prefix).
#[allow(missing_docs)]
pub mod device_attribute_v5 {
    pub const ECC_ENABLED: i32 = 0;
    pub const CAN_MAP_HOST_MEMORY: i32 = 3;
    pub const CLOCK_RATE: i32 = 5;
    pub const COMPUTE_MODE: i32 = 6;
    pub const CONCURRENT_KERNELS: i32 = 8;
    pub const CONCURRENT_MANAGED_ACCESS: i32 = 9;
    pub const COOPERATIVE_LAUNCH: i32 = 10;
    pub const COOPERATIVE_MULTI_DEVICE_LAUNCH: i32 = 11;
    pub const DIRECT_MANAGED_MEM_ACCESS_FROM_HOST: i32 = 13;
    pub const INTEGRATED: i32 = 16;
    pub const IS_MULTI_GPU_BOARD: i32 = 17;
    pub const KERNEL_EXEC_TIMEOUT: i32 = 18;
    pub const L2_CACHE_SIZE: i32 = 19;
    pub const COMPUTE_CAPABILITY_MAJOR: i32 = 23;
    pub const MANAGED_MEMORY: i32 = 24;
    pub const MAX_BLOCK_DIM_X: i32 = 26;
    pub const MAX_BLOCK_DIM_Y: i32 = 27;
    pub const MAX_BLOCK_DIM_Z: i32 = 28;
    pub const MAX_GRID_DIM_X: i32 = 29;
    pub const MAX_GRID_DIM_Y: i32 = 30;
    pub const MAX_GRID_DIM_Z: i32 = 31;
    pub const MAX_THREADS_PER_BLOCK: i32 = 56;
    pub const MAX_THREADS_PER_MULTI_PROCESSOR: i32 = 57;
    pub const MEMORY_BUS_WIDTH: i32 = 59;
    pub const MEMORY_CLOCK_RATE: i32 = 60;
    pub const COMPUTE_CAPABILITY_MINOR: i32 = 61;
    pub const MULTIPROCESSOR_COUNT: i32 = 63;
    pub const PAGEABLE_MEMORY_ACCESS: i32 = 65;
    pub const PAGEABLE_MEMORY_ACCESS_USES_HOST_PAGE_TABLES: i32 = 66;
    pub const PCI_BUS_ID: i32 = 67;
    pub const PCI_DEVICE_ID: i32 = 68;
    pub const PCI_DOMAIN_ID: i32 = 69;
    pub const MAX_REGISTERS_PER_BLOCK: i32 = 71;
    pub const MAX_SHARED_MEMORY_PER_BLOCK: i32 = 74;
    pub const STREAM_PRIORITIES_SUPPORTED: i32 = 78;
    pub const TCC_DRIVER: i32 = 80;
    pub const TOTAL_CONSTANT_MEMORY: i32 = 83;
    pub const UNIFIED_ADDRESSING: i32 = 85;
    pub const WARP_SIZE: i32 = 87;
    pub const CLOCK_INSTRUCTION_RATE: i32 = 10000;
    pub const MAX_SHARED_MEMORY_PER_MULTIPROCESSOR: i32 = 10002;
    pub const GCN_ARCH: i32 = 10003;
    pub const IS_LARGE_BAR: i32 = 10011;
    pub const ASIC_REVISION: i32 = 10012;
    pub const CAN_USE_STREAM_WAIT_VALUE: i32 = 10013;
}

impl DeviceProp {
    /// The value of attribute `attribute` (a [`device_attribute_v5`] number) as
    /// `hipDeviceGetAttribute` gives it, from these properties; `None` for one it does not
    /// answer. Sizes past `c_int` are clamped, as HIP does.
    pub fn attribute(&self, attribute: i32) -> Option<c_int> {
        use device_attribute_v5 as a;
        let clamp = |n: usize| c_int::try_from(n).unwrap_or(c_int::MAX);
        Some(match attribute {
            a::ECC_ENABLED => self.ecc_enabled,
            a::CAN_MAP_HOST_MEMORY => self.can_map_host_memory,
            a::CLOCK_RATE => self.clock_rate,
            a::COMPUTE_MODE => self.compute_mode,
            a::CONCURRENT_KERNELS => self.concurrent_kernels,
            a::CONCURRENT_MANAGED_ACCESS => self.concurrent_managed_access,
            a::COOPERATIVE_LAUNCH => self.cooperative_launch,
            a::COOPERATIVE_MULTI_DEVICE_LAUNCH => self.cooperative_multi_device_launch,
            a::DIRECT_MANAGED_MEM_ACCESS_FROM_HOST => self.direct_managed_mem_access_from_host,
            a::INTEGRATED => self.integrated,
            a::IS_MULTI_GPU_BOARD => self.is_multi_gpu_board,
            a::KERNEL_EXEC_TIMEOUT => self.kernel_exec_timeout_enabled,
            a::L2_CACHE_SIZE => self.l2_cache_size,
            a::COMPUTE_CAPABILITY_MAJOR => self.major,
            a::MANAGED_MEMORY => self.managed_memory,
            a::MAX_BLOCK_DIM_X => self.max_threads_dim[0],
            a::MAX_BLOCK_DIM_Y => self.max_threads_dim[1],
            a::MAX_BLOCK_DIM_Z => self.max_threads_dim[2],
            a::MAX_GRID_DIM_X => self.max_grid_size[0],
            a::MAX_GRID_DIM_Y => self.max_grid_size[1],
            a::MAX_GRID_DIM_Z => self.max_grid_size[2],
            a::MAX_THREADS_PER_BLOCK => self.max_threads_per_block,
            a::MAX_THREADS_PER_MULTI_PROCESSOR => self.max_threads_per_multi_processor,
            a::MEMORY_BUS_WIDTH => self.memory_bus_width,
            a::MEMORY_CLOCK_RATE => self.memory_clock_rate,
            a::COMPUTE_CAPABILITY_MINOR => self.minor,
            a::MULTIPROCESSOR_COUNT => self.multi_processor_count,
            a::PAGEABLE_MEMORY_ACCESS => self.pageable_memory_access,
            a::PAGEABLE_MEMORY_ACCESS_USES_HOST_PAGE_TABLES => self.pageable_memory_access_uses_host_page_tables,
            a::PCI_BUS_ID => self.pci_bus_id,
            a::PCI_DEVICE_ID => self.pci_device_id,
            a::PCI_DOMAIN_ID => self.pci_domain_id,
            a::MAX_REGISTERS_PER_BLOCK => self.regs_per_block,
            a::MAX_SHARED_MEMORY_PER_BLOCK => clamp(self.shared_mem_per_block),
            a::STREAM_PRIORITIES_SUPPORTED => 1,
            a::TCC_DRIVER => self.tcc_driver,
            a::TOTAL_CONSTANT_MEMORY => clamp(self.total_const_mem),
            a::UNIFIED_ADDRESSING => 1,
            a::WARP_SIZE => self.warp_size,
            a::CLOCK_INSTRUCTION_RATE => self.clock_instruction_rate,
            a::MAX_SHARED_MEMORY_PER_MULTIPROCESSOR => clamp(self.max_shared_memory_per_multi_processor),
            a::GCN_ARCH => self.gcn_arch,
            a::IS_LARGE_BAR => self.is_large_bar,
            a::ASIC_REVISION => self.asic_revision,
            a::CAN_USE_STREAM_WAIT_VALUE => 1,
            _ => return None,
        })
    }
}
