//! `libcufile.so.0` (hipfile-cufile) as cuFile's programs see it: `tests/c/cufile.c`, built
//! against `include/cufile.h` and linked with that library alone, run over the mock HIP
//! runtime (and once more under sanitizers); the header against NVIDIA's own `cufile.h`
//! (values, layouts and prototypes); and the library's exports against the header.

mod common;

use std::collections::BTreeSet;
use std::path::{Path, PathBuf};
use std::process::Command;

use common::*;

/// Builds `tests/c/cufile.c` (`sanitized`: with AddressSanitizer and UBSan).
fn build(sanitized: bool) -> PathBuf {
    require_hip_headers();
    let lib = lib_dir();
    let exe = scratch("c").join(format!("cufile{}-{}", if sanitized { "-san" } else { "" }, std::process::id()));
    let mut cmd = cc();
    cmd.args(["-std=c11", "-Wall", "-Wextra", "-Werror", "-g", "-D__HIP_PLATFORM_AMD__", "-D_GNU_SOURCE"])
        .arg("-I")
        .arg(include_dir())
        .arg(Path::new(env!("CARGO_MANIFEST_DIR")).join("tests/c/cufile.c"));
    if sanitized {
        cmd.args(["-fsanitize=address,undefined", "-fno-sanitize-recover=all", "-fno-omit-frame-pointer"]);
    }
    // libcufile only: it finds libhipfile.so.0 itself. The mock HIP runtime is in the program,
    // as a HIP program's runtime is.
    cmd.arg("-L").arg(&lib).arg(format!("-Wl,-rpath,{}", lib.display()));
    cmd.args(["-lcufile", "-Wl,--no-as-needed", "-lhipfile_mockhip", "-Wl,--as-needed", "-ldl", "-lpthread"]);
    cmd.arg("-o").arg(&exe);
    run_ok(&mut cmd);
    exe
}

fn run_program(sanitized: bool) {
    let exe = build(sanitized);
    let dir = scratch("c-data");
    let out = run_ok(&mut program(&exe, &[&dir], &[]));
    assert_eq!(String::from_utf8_lossy(&out.stdout).trim(), "ok");
    assert_eq!(String::from_utf8_lossy(&out.stderr), "", "a quiet library");
}

#[test]
fn a_cufile_program_runs_on_libcufile_over_the_mock() {
    run_program(false);
}

#[test]
fn a_cufile_program_under_sanitizers() {
    run_program(true);
}

/// `include/cufile.h`.
fn our_header() -> PathBuf {
    include_dir().join("cufile.h")
}

/// The directory of NVIDIA's `cufile.h` of cuFile 1.20: `HIPFILE_NVIDIA_CUFILE_INCLUDE`
/// (`cargo xtask ci` sets it to the `nvidia-cufile` wheel's), else CUDA's. `None` where neither
/// exists; CI must have one.
fn nvidia_include() -> Option<PathBuf> {
    nvidia_include_of("HIPFILE_NVIDIA_CUFILE_INCLUDE")
}

/// The directory of NVIDIA's `cufile.h` named by the environment variable `var`, else CUDA's.
fn nvidia_include_of(var: &str) -> Option<PathBuf> {
    let dir = std::env::var_os(var)
        .map(PathBuf::from)
        .or_else(|| Some(PathBuf::from("/usr/local/cuda/include")))
        .filter(|d| d.join("cufile.h").exists());
    assert!(
        dir.is_some() || std::env::var_os("CI").is_none(),
        "NVIDIA's cufile.h is needed in CI: set {var} (cargo xtask ci does)"
    );
    dir
}

/// What a program compiled against a header sees (with `_GNU_SOURCE`, which NVIDIA's header
/// needs for `loff_t`): every enum value, and every structure's size
/// and field offsets, one per line.
const LAYOUT_PROGRAM: &str = r#"
#include <stddef.h>
#include <stdio.h>
#include <time.h> /* NVIDIA's header uses struct timespec without including it */
#include <cufile.h>
#define V(x) printf("%s %lld\n", #x, (long long)(x));
#define S(t) printf("sizeof %s %zu\n", #t, sizeof(t));
#define O(t, f) printf("offsetof %s.%s %zu\n", #t, #f, offsetof(t, f));
int main(void) {
    V(CUFILEOP_BASE_ERR) V(CU_FILE_SUCCESS) V(CU_FILE_DRIVER_NOT_INITIALIZED) V(CU_FILE_DRIVER_INVALID_PROPS)
    V(CU_FILE_DRIVER_UNSUPPORTED_LIMIT) V(CU_FILE_DRIVER_VERSION_MISMATCH) V(CU_FILE_DRIVER_VERSION_READ_ERROR)
    V(CU_FILE_DRIVER_CLOSING) V(CU_FILE_PLATFORM_NOT_SUPPORTED) V(CU_FILE_IO_NOT_SUPPORTED)
    V(CU_FILE_DEVICE_NOT_SUPPORTED) V(CU_FILE_NVFS_DRIVER_ERROR) V(CU_FILE_CUDA_DRIVER_ERROR)
    V(CU_FILE_CUDA_POINTER_INVALID) V(CU_FILE_CUDA_MEMORY_TYPE_INVALID) V(CU_FILE_CUDA_POINTER_RANGE_ERROR)
    V(CU_FILE_CUDA_CONTEXT_MISMATCH) V(CU_FILE_INVALID_MAPPING_SIZE) V(CU_FILE_INVALID_MAPPING_RANGE)
    V(CU_FILE_INVALID_FILE_TYPE) V(CU_FILE_INVALID_FILE_OPEN_FLAG) V(CU_FILE_DIO_NOT_SET) V(CU_FILE_INVALID_VALUE)
    V(CU_FILE_MEMORY_ALREADY_REGISTERED) V(CU_FILE_MEMORY_NOT_REGISTERED) V(CU_FILE_PERMISSION_DENIED)
    V(CU_FILE_DRIVER_ALREADY_OPEN) V(CU_FILE_HANDLE_NOT_REGISTERED) V(CU_FILE_HANDLE_ALREADY_REGISTERED)
    V(CU_FILE_DEVICE_NOT_FOUND) V(CU_FILE_INTERNAL_ERROR) V(CU_FILE_GETNEWFD_FAILED) V(CU_FILE_NVFS_SETUP_ERROR)
    V(CU_FILE_IO_DISABLED) V(CU_FILE_BATCH_SUBMIT_FAILED) V(CU_FILE_GPU_MEMORY_PINNING_FAILED) V(CU_FILE_BATCH_FULL)
    V(CU_FILE_ASYNC_NOT_SUPPORTED) V(CU_FILE_INTERNAL_BATCH_SETUP_ERROR) V(CU_FILE_INTERNAL_BATCH_SUBMIT_ERROR)
    V(CU_FILE_INTERNAL_BATCH_GETSTATUS_ERROR) V(CU_FILE_INTERNAL_BATCH_CANCEL_ERROR) V(CU_FILE_NOMEM_ERROR)
    V(CU_FILE_IO_ERROR) V(CU_FILE_INTERNAL_BUF_REGISTER_ERROR) V(CU_FILE_HASH_OPR_ERROR)
    V(CU_FILE_INVALID_CONTEXT_ERROR) V(CU_FILE_NVFS_INTERNAL_DRIVER_ERROR) V(CU_FILE_BATCH_NOCOMPAT_ERROR)
    V(CU_FILE_IO_MAX_ERROR)
    V(CU_FILE_LUSTRE_SUPPORTED) V(CU_FILE_WEKAFS_SUPPORTED) V(CU_FILE_NFS_SUPPORTED) V(CU_FILE_GPFS_SUPPORTED)
    V(CU_FILE_NVME_SUPPORTED) V(CU_FILE_NVMEOF_SUPPORTED) V(CU_FILE_SCSI_SUPPORTED)
    V(CU_FILE_SCALEFLUX_CSD_SUPPORTED) V(CU_FILE_NVMESH_SUPPORTED) V(CU_FILE_BEEGFS_SUPPORTED)
    V(CU_FILE_NVME_P2P_SUPPORTED) V(CU_FILE_SCATEFS_SUPPORTED) V(CU_FILE_VIRTIOFS_SUPPORTED)
    V(CU_FILE_PANFS_SUPPORTED) V(CU_FILE_MAX_TARGET_TYPES) V(CU_FILE_USE_POLL_MODE) V(CU_FILE_ALLOW_COMPAT_MODE)
    V(CU_FILE_VANILLA_POSIX_IO_MODE) V(CU_FILE_POSIX_IO_MODE) V(CU_FILE_FALLBACK_IO_MODE)
    V(CU_FILE_DYN_ROUTING_SUPPORTED) V(CU_FILE_BATCH_IO_SUPPORTED) V(CU_FILE_STREAMS_SUPPORTED)
    V(CU_FILE_PARALLEL_IO_SUPPORTED) V(CU_FILE_P2P_SUPPORTED) V(CUFILE_P2PDMA) V(CUFILE_NVFS) V(CUFILE_DMABUF)
    V(CUFILE_C2C) V(CUFILE_NVIDIA_PEERMEM) V(CU_FILE_P2P_FLAG_PCI_P2PDMA) V(CU_FILE_P2P_FLAG_NVFS)
    V(CU_FILE_P2P_FLAG_DMABUF) V(CU_FILE_P2P_FLAG_C2C) V(CU_FILE_RDMA_ERR_BASE) V(CU_FILE_RDMA_SUCCESS)
    V(CU_FILE_RDMA_RESET_TOKEN) V(CU_FILE_RDMA_RESET_TOKEN_FAILED) V(CU_FILE_HANDLE_TYPE_OPAQUE_FD) V(CU_FILE_HANDLE_TYPE_OPAQUE_WIN32)
    V(CU_FILE_HANDLE_TYPE_USERSPACE_FS) V(CU_FILE_RDMA_REGISTER) V(CU_FILE_RDMA_RELAXED_ORDERING)
    V(CUFILE_READ) V(CUFILE_WRITE) V(CUFILE_WAITING) V(CUFILE_PENDING) V(CUFILE_INVALID) V(CUFILE_CANCELED)
    V(CUFILE_COMPLETE) V(CUFILE_TIMEOUT) V(CUFILE_FAILED) V(CUFILE_BATCH) V(CU_FILE_STREAM_FIXED_BUF_OFFSET)
    V(CU_FILE_STREAM_FIXED_FILE_OFFSET) V(CU_FILE_STREAM_FIXED_FILE_SIZE) V(CU_FILE_STREAM_PAGE_ALIGNED_INPUTS)
    V(CUFILE_PARAM_PROFILE_STATS) V(CUFILE_PARAM_EXECUTION_MAX_IO_QUEUE_DEPTH) V(CUFILE_PARAM_EXECUTION_MAX_IO_THREADS)
    V(CUFILE_PARAM_EXECUTION_MIN_IO_THRESHOLD_SIZE_KB) V(CUFILE_PARAM_EXECUTION_MAX_REQUEST_PARALLELISM)
    V(CUFILE_PARAM_PROPERTIES_MAX_DIRECT_IO_SIZE_KB) V(CUFILE_PARAM_PROPERTIES_MAX_DEVICE_CACHE_SIZE_KB)
    V(CUFILE_PARAM_PROPERTIES_PER_BUFFER_CACHE_SIZE_KB) V(CUFILE_PARAM_PROPERTIES_MAX_DEVICE_PINNED_MEM_SIZE_KB)
    V(CUFILE_PARAM_PROPERTIES_IO_BATCHSIZE) V(CUFILE_PARAM_POLLTHRESHOLD_SIZE_KB)
    V(CUFILE_PARAM_PROPERTIES_BATCH_IO_TIMEOUT_MS) V(CUFILE_PARAM_PROPERTIES_USE_POLL_MODE)
    V(CUFILE_PARAM_PROPERTIES_ALLOW_COMPAT_MODE) V(CUFILE_PARAM_FORCE_COMPAT_MODE)
    V(CUFILE_PARAM_FS_MISC_API_CHECK_AGGRESSIVE) V(CUFILE_PARAM_EXECUTION_PARALLEL_IO) V(CUFILE_PARAM_PROFILE_NVTX)
    V(CUFILE_PARAM_PROPERTIES_ALLOW_SYSTEM_MEMORY) V(CUFILE_PARAM_USE_PCIP2PDMA) V(CUFILE_PARAM_PREFER_IO_URING)
    V(CUFILE_PARAM_FORCE_ODIRECT_MODE) V(CUFILE_PARAM_SKIP_TOPOLOGY_DETECTION) V(CUFILE_PARAM_STREAM_MEMOPS_BYPASS)
    V(CUFILE_PARAM_PROPERTIES_POSIX_IO_MODE) V(CUFILE_PARAM_GDS_FALLBACK_IO)
    V(CUFILE_PARAM_LOGGING_LEVEL) V(CUFILE_PARAM_ENV_LOGFILE_PATH) V(CUFILE_PARAM_LOG_DIR) V(CUFILE_PARAM_RDMA_TRANSPORT)
    V(CUFILE_PARAM_POSIX_POOL_SLAB_SIZE_KB) V(CUFILE_PARAM_POSIX_POOL_SLAB_COUNT)
    V(CUFILE_PARAM_GPU_BOUNCE_BUFFER_SLAB_SIZE_KB) V(CUFILE_PARAM_GPU_BOUNCE_BUFFER_SLAB_COUNT) V(CUFILE_GPU_UUID_LEN)
    S(CUfileError_t) O(CUfileError_t, err) O(CUfileError_t, cu_err)
    S(CUfileDrvProps_t) O(CUfileDrvProps_t, nvfs.major_version) O(CUfileDrvProps_t, nvfs.minor_version)
    O(CUfileDrvProps_t, nvfs.poll_thresh_size) O(CUfileDrvProps_t, nvfs.max_direct_io_size)
    O(CUfileDrvProps_t, nvfs.dstatusflags) O(CUfileDrvProps_t, nvfs.dcontrolflags) O(CUfileDrvProps_t, fflags)
    O(CUfileDrvProps_t, max_device_cache_size) O(CUfileDrvProps_t, per_buffer_cache_size)
    O(CUfileDrvProps_t, max_device_pinned_mem_size) O(CUfileDrvProps_t, max_batch_io_size)
    O(CUfileDrvProps_t, max_batch_io_timeout_msecs)
    S(cufileRDMAInfo_t) O(cufileRDMAInfo_t, desc_len) O(cufileRDMAInfo_t, desc_str)
    S(CUfileFSOps_t) O(CUfileFSOps_t, getRDMADeviceList) O(CUfileFSOps_t, write)
    S(CUfileDescr_t) O(CUfileDescr_t, type) O(CUfileDescr_t, handle.fd) O(CUfileDescr_t, handle.handle)
    O(CUfileDescr_t, fs_ops)
    S(CUfileIOParams_t) O(CUfileIOParams_t, mode) O(CUfileIOParams_t, u.batch.devPtr_base)
    O(CUfileIOParams_t, u.batch.file_offset) O(CUfileIOParams_t, u.batch.devPtr_offset)
    O(CUfileIOParams_t, u.batch.size) O(CUfileIOParams_t, fh) O(CUfileIOParams_t, opcode) O(CUfileIOParams_t, cookie)
    S(CUfileIOEvents_t) O(CUfileIOEvents_t, cookie) O(CUfileIOEvents_t, status) O(CUfileIOEvents_t, ret)
    S(CUfileOpCounter_t) S(CUfileStatsLevel1_t) O(CUfileStatsLevel1_t, read_bytes)
    O(CUfileStatsLevel1_t, batch_submit_ops) O(CUfileStatsLevel1_t, batch_read_bytes)
    O(CUfileStatsLevel1_t, last_batch_write_bytes) O(CUfileStatsLevel1_t, readv_ops) O(CUfileStatsLevel1_t, writev_ops)
    O(CUfileStatsLevel1_t, readv_bytes) O(CUfileStatsLevel1_t, readv_lat_avg_us) O(CUfileStatsLevel1_t, writev_lat_sum_us)
    S(CUfileIOVec_t) O(CUfileIOVec_t, base) O(CUfileIOVec_t, len)
    S(CUfileStatsLevel2_t) O(CUfileStatsLevel2_t, read_size_kb_hist) O(CUfileStatsLevel2_t, write_size_kb_hist)
    S(CUfilePerGpuStats_t) O(CUfilePerGpuStats_t, read_bytes) O(CUfilePerGpuStats_t, writes_bytes)
    O(CUfilePerGpuStats_t, reg_bytes)
    S(CUfileStatsLevel3_t) O(CUfileStatsLevel3_t, num_gpus) O(CUfileStatsLevel3_t, per_gpu_stats)
    return 0;
}
"#;

/// A stand-in for CUDA's `cuda.h` (NVIDIA's `cufile.h` includes it; CI has no CUDA): the two
/// types `cufile.h` uses, as CUDA declares them.
const CUDA_H: &str =
    "typedef enum cudaError_enum { CUDA_SUCCESS = 0 } CUresult;\ntypedef struct CUstream_st *CUstream;\n";

/// Compiles and runs [`LAYOUT_PROGRAM`] against the `cufile.h` in `include`; its output.
fn layout_with(name: &str, include: &Path) -> String {
    let dir = scratch(&format!("cufile-layout-{name}"));
    std::fs::write(dir.join("layout.c"), LAYOUT_PROGRAM).unwrap();
    std::fs::write(dir.join("cuda.h"), CUDA_H).unwrap();
    let exe = dir.join("layout");
    run_ok(
        cc().args(["-std=c11", "-D_GNU_SOURCE", "-Wall", "-Werror", "-I"])
            .arg(include)
            .arg("-I")
            .arg(&dir)
            .arg(dir.join("layout.c"))
            .arg("-o")
            .arg(&exe),
    );
    String::from_utf8(run_ok(&mut Command::new(&exe)).stdout).unwrap()
}

#[test]
fn the_header_has_nvidias_values_and_layouts() {
    let Some(nvidia) = nvidia_include() else {
        eprintln!("skipped: no NVIDIA cufile.h here (CI has one)");
        return;
    };
    let ours = layout_with("ours", &include_dir());
    assert_eq!(ours, layout_with("nvidia", &nvidia));
    assert!(ours.lines().count() > 150, "{ours}");
}

/// The function prototypes `include/cufile.h` declares (each starts a line with its return
/// type and ends at its `;`).
fn our_prototypes() -> Vec<String> {
    let text = std::fs::read_to_string(our_header()).unwrap();
    let mut protos = Vec::new();
    let mut current: Option<String> = None;
    for line in text.lines() {
        let starts = ["CUfileError_t cuFile", "void cuFile", "ssize_t cuFile", "long cuFile"]
            .iter()
            .any(|p| line.starts_with(p));
        if starts {
            current = Some(String::new());
        }
        if let Some(proto) = current.as_mut() {
            proto.push_str(line.trim());
            proto.push(' ');
            if line.contains(';') {
                protos.push(current.take().unwrap());
            }
        }
    }
    protos
}

/// The function names in prototypes.
fn names(protos: &[String]) -> BTreeSet<String> {
    protos.iter().map(|p| p.split('(').next().unwrap().rsplit(' ').next().unwrap().to_owned()).collect()
}

#[test]
fn the_prototypes_are_nvidias() {
    let ours = our_prototypes();
    assert_eq!(names(&ours).len(), 49, "{ours:?}");
    let Some(nvidia) = nvidia_include() else {
        eprintln!("skipped: no NVIDIA cufile.h here (CI has one)");
        return;
    };
    // Declaring each of our prototypes after NVIDIA's header fails on any difference in
    // return or parameter types ("conflicting types").
    let dir = scratch("cufile-prototypes");
    std::fs::write(dir.join("cuda.h"), CUDA_H).unwrap();
    let src = format!("#include <time.h>\n#include <cufile.h>\n{}\n", ours.join("\n"));
    std::fs::write(dir.join("both.c"), src).unwrap();
    run_ok(
        cc().args(["-std=c11", "-D_GNU_SOURCE", "-Wall", "-Werror", "-c", "-I"])
            .arg(&nvidia)
            .arg("-I")
            .arg(&dir)
            .arg(dir.join("both.c"))
            .arg("-o")
            .arg(dir.join("both.o")),
    );
    // And NVIDIA's header declares no function this one lacks.
    let text = std::fs::read_to_string(nvidia.join("cufile.h")).unwrap();
    let theirs: BTreeSet<String> = text
        .split(|c: char| !(c.is_alphanumeric() || c == '_'))
        .filter(|w| w.starts_with("cuFile") && text.contains(&format!("{w}(")))
        .map(str::to_owned)
        .collect();
    let ours = names(&ours);
    let missing: Vec<_> = theirs.difference(&ours).collect();
    assert!(missing.is_empty(), "declared by NVIDIA's cufile.h, not ours: {missing:?}");
}

#[test]
fn the_library_exports_what_the_header_declares_and_its_soname_is_cufiles() {
    let lib = deps_dir().join("libhipfile_cufile.so");
    let out = run_ok(Command::new("nm").args(["-D", "--defined-only"]).arg(&lib));
    let exported: BTreeSet<String> = String::from_utf8_lossy(&out.stdout)
        .lines()
        .filter_map(|l| match l.split_whitespace().collect::<Vec<_>>()[..] {
            [_, "T", name] => Some(name.to_owned()),
            _ => None,
        })
        .collect();
    let mut declared = names(&our_prototypes());
    declared.insert("cuFileDriverClose_v2".into()); // what the header's macro makes of cuFileDriverClose
    assert_eq!(exported, declared);
    let out = run_ok(Command::new("readelf").arg("-d").arg(&lib));
    let dynamic = String::from_utf8_lossy(&out.stdout);
    assert!(dynamic.contains("Library soname: [libcufile.so.0]"), "{dynamic}");
    assert!(!dynamic.contains("libhipfile"), "libhipfile.so.0 is loaded at run time, not linked: {dynamic}");
}

/// Builds `tests/c/SOURCE` against the `cufile.h` in `include` (NVIDIA's needs the stand-in
/// `cuda.h` and `struct timespec` first), linked with libcufile only, over the mock HIP runtime.
fn build_against(source: &str, include: &Path, name: &str) -> PathBuf {
    require_hip_headers();
    let lib = lib_dir();
    let dir = scratch(&format!("cufile-{name}"));
    std::fs::write(dir.join("cuda.h"), CUDA_H).unwrap();
    let exe = dir.join(format!("{name}-{}", std::process::id()));
    let mut cmd = cc();
    cmd.args(["-std=c11", "-Wall", "-Wextra", "-Werror", "-g", "-D__HIP_PLATFORM_AMD__", "-D_GNU_SOURCE"])
        .args(["-include", "time.h", "-include", "stddef.h", "-I"])
        .arg(include)
        .arg("-I")
        .arg(&dir)
        .arg("-I")
        .arg(Path::new(env!("CARGO_MANIFEST_DIR")).join("tests/c"))
        .arg(Path::new(env!("CARGO_MANIFEST_DIR")).join("tests/c").join(source));
    cmd.arg("-L").arg(&lib).arg(format!("-Wl,-rpath,{}", lib.display()));
    cmd.args(["-lcufile", "-Wl,--no-as-needed", "-lhipfile_mockhip", "-Wl,--as-needed", "-ldl", "-lpthread"]);
    cmd.arg("-o").arg(&exe);
    run_ok(&mut cmd);
    exe
}

/// What `tests/c/cufile_v120.c` prints over this library: each line checked against what
/// NVIDIA's cuFile 1.20 answered on a GPU machine without the GDS module where it could run the
/// call (docs/cufile.md, "Versions", says where the two differ and why).
const V120_TRANSCRIPT: &str = include_str!("c/cufile_v120.expected");

#[test]
fn a_cufile_1_20_program_gets_the_1_20_answers() {
    let mut headers = vec![("ours", include_dir())];
    headers.extend(nvidia_include().map(|d| ("nvidia-1.20", d)));
    for (name, include) in headers {
        let exe = build_against("cufile_v120.c", &include, &format!("v120-{name}"));
        let out = run_ok(&mut program(&exe, &[&scratch("c-data")], &[]));
        assert_eq!(String::from_utf8_lossy(&out.stdout), V120_TRANSCRIPT, "built against {name}'s header");
        assert_eq!(String::from_utf8_lossy(&out.stderr), "", "a quiet library");
    }
}

/// The statistics as programs built against 1.15's header and 1.20's read them: each gets its
/// own layout, nothing written past it, with `HIPFILE_CUFILE_VERSION` saying which (a 1.15
/// program under the default is written past, as NVIDIA's 1.20 library writes past it).
#[test]
fn statistics_have_the_layout_of_the_version_served() {
    let ours = build_against("cufile_stats.c", &include_dir(), "stats-ours");
    let out = run_ok(&mut program(&ours, &[&scratch("c-data")], &[]));
    assert_eq!(String::from_utf8_lossy(&out.stdout), "version 1200 l1 624\n");
    if let Some(nvidia) = nvidia_include() {
        let exe = build_against("cufile_stats.c", &nvidia, "stats-nvidia-1.20");
        let out = run_ok(&mut program(&exe, &[&scratch("c-data")], &[]));
        assert_eq!(String::from_utf8_lossy(&out.stdout), "version 1200 l1 624\n");
    }
    let Some(old) = nvidia_include_of("HIPFILE_NVIDIA_CUFILE_115_INCLUDE") else {
        eprintln!("skipped: no NVIDIA cufile.h of 1.15 here (CI has one)");
        return;
    };
    let exe = build_against("cufile_stats.c", &old, "stats-nvidia-1.15");
    let out = run_ok(&mut program(&exe, &[&scratch("c-data")], &[("HIPFILE_CUFILE_VERSION", "1.15")]));
    assert_eq!(String::from_utf8_lossy(&out.stdout), "version 1150 l1 512\n");
    let overrun = program(&exe, &[&scratch("c-data")], &[]).output().unwrap();
    assert_eq!(overrun.status.code(), Some(3), "a 1.15 program under 1.20's layout is written past");
}
