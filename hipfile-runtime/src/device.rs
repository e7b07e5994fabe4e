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
    /// those of a discrete GPU without textures' extra limits or the CUDA-only features (0
    /// where not set here).
    fn from(p: &DeviceProp) -> Self {
        // SAFETY: every field is an integer, an array of integers or a raw pointer, for which
        // all-zero bytes are a valid value (the pointers null).
        let mut r: DevicePropR0600 = unsafe { std::mem::zeroed() };
        macro_rules! carry {
            ($($field:ident),* $(,)?) => { $(r.$field = p.$field;)* };
        }
        carry! {
            name, total_global_mem, shared_mem_per_block, regs_per_block, warp_size, mem_pitch, max_threads_per_block,
            max_threads_dim, max_grid_size, clock_rate, total_const_mem, major, minor, texture_alignment,
            texture_pitch_alignment, multi_processor_count, kernel_exec_timeout_enabled, integrated,
            can_map_host_memory, compute_mode, max_texture_1d, max_texture_1d_linear, max_texture_2d, max_texture_3d,
            concurrent_kernels, ecc_enabled, pci_bus_id, pci_device_id, pci_domain_id, tcc_driver, memory_clock_rate,
            memory_bus_width, l2_cache_size, max_threads_per_multi_processor, managed_memory, is_multi_gpu_board,
            pageable_memory_access, concurrent_managed_access, cooperative_launch, cooperative_multi_device_launch,
            pageable_memory_access_uses_host_page_tables, direct_managed_mem_access_from_host, gcn_arch_name,
            max_shared_memory_per_multi_processor, clock_instruction_rate, arch, hdp_mem_flush_cntl,
            hdp_reg_flush_cntl, cooperative_multi_device_unmatched_func, cooperative_multi_device_unmatched_grid_dim,
            cooperative_multi_device_unmatched_block_dim, cooperative_multi_device_unmatched_shared_mem, is_large_bar,
            asic_revision
        }
        // Texture and surface limits: HIP 5's, and layered ones of 2048 layers (2046 faces).
        let ([w, h], one, three) = (p.max_texture_2d, p.max_texture_1d, p.max_texture_3d);
        (r.max_texture_1d_mipmap, r.max_texture_2d_mipmap, r.max_texture_2d_gather) = (one, [w, h], [w, h]);
        (r.max_texture_2d_linear, r.max_texture_3d_alt, r.max_texture_cubemap) = ([w, h, w * 4], three, w);
        (r.max_texture_1d_layered, r.max_texture_2d_layered, r.max_texture_cubemap_layered) =
            ([one, 2048], [w, h, 2048], [w, 2046]);
        (r.max_surface_1d, r.max_surface_2d, r.max_surface_3d, r.max_surface_cubemap) = (one, [w, h], three, w);
        (r.max_surface_1d_layered, r.max_surface_2d_layered, r.max_surface_cubemap_layered) =
            ([one, 2048], [w, h, 2048], [w, 2046]);
        r.surface_alignment = p.texture_alignment;
        // Named again under HIP 6's names.
        r.shared_mem_per_multiprocessor = p.max_shared_memory_per_multi_processor;
        r.regs_per_multiprocessor = p.regs_per_block;
        r.shared_mem_per_block_optin = p.shared_mem_per_block;
        // What a discrete GPU has.
        (r.device_overlap, r.async_engine_count, r.unified_addressing, r.max_blocks_per_multi_processor) =
            (1, 2, 1, 32);
        (r.stream_priorities_supported, r.global_l1_cache_supported, r.local_l1_cache_supported) = (1, 1, 1);
        (r.host_native_atomic_supported, r.host_register_supported, r.host_register_read_only_supported) = (1, 1, 1);
        r
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
