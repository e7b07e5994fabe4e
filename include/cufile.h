/*
 * cufile.h: NVIDIA cuFile's C API (cuFile 1.20) as hipfile-rs's libcufile.so.0
 * implements it: the same names, values, layouts and prototypes, so that a program written for
 * cuFile compiles against this header and runs on hipfile-rs, and one built against NVIDIA's
 * runs on hipfile-rs's library unchanged. docs/cufile.md says what each call does here.
 *
 * Where <cuda.h> can be included, CUresult and CUstream are CUDA's; elsewhere (a machine with
 * no CUDA, as in CI over the mock GPU) this header declares the two itself.
 */
#ifndef HIPFILE_CUFILE_H
#define HIPFILE_CUFILE_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>
#include <stdlib.h>     /* abs() in IS_CUFILE_ERR and CUFILE_ERRSTR */
#include <sys/socket.h> /* struct sockaddr in CUfileFSOps_t */
#include <sys/types.h>
#include <time.h> /* struct timespec in cuFileBatchIOGetStatus */

#if defined(__has_include)
#if __has_include(<cuda.h>)
#include <cuda.h>
#define HIPFILE_CUFILE_HAVE_CUDA_H 1
#endif
#endif
#ifndef HIPFILE_CUFILE_HAVE_CUDA_H
/* CUDA's driver API types, as <cuda.h> names them (only the success value is used here). */
typedef enum cudaError_enum { CUDA_SUCCESS = 0 } CUresult;
typedef struct CUstream_st *CUstream;
#endif

#ifdef __cplusplus
extern "C" {
#endif

/* ----------------------------------------------------------------- errors */
#define CUFILEOP_BASE_ERR 5000

/* Every status: name, value, and what it says (cufileop_status_error). */
#define HIPFILE_CUFILE_STATUSES(X)                                                             \
    X(CU_FILE_SUCCESS, 0, "success")                                                           \
    X(CU_FILE_DRIVER_NOT_INITIALIZED, 1, "the driver is not open")                             \
    X(CU_FILE_DRIVER_INVALID_PROPS, 2, "invalid driver property")                              \
    X(CU_FILE_DRIVER_UNSUPPORTED_LIMIT, 3, "driver property out of range")                     \
    X(CU_FILE_DRIVER_VERSION_MISMATCH, 4, "driver version mismatch")                           \
    X(CU_FILE_DRIVER_VERSION_READ_ERROR, 5, "driver version unreadable")                       \
    X(CU_FILE_DRIVER_CLOSING, 6, "the driver is closing")                                      \
    X(CU_FILE_PLATFORM_NOT_SUPPORTED, 7, "no direct path on this platform")                    \
    X(CU_FILE_IO_NOT_SUPPORTED, 8, "not supported for this file")                              \
    X(CU_FILE_DEVICE_NOT_SUPPORTED, 9, "not supported for this GPU")                           \
    X(CU_FILE_NVFS_DRIVER_ERROR, 10, "direct-path kernel driver error")                        \
    X(CU_FILE_CUDA_DRIVER_ERROR, 11, "GPU runtime error")                                      \
    X(CU_FILE_CUDA_POINTER_INVALID, 12, "invalid device pointer")                              \
    X(CU_FILE_CUDA_MEMORY_TYPE_INVALID, 13, "not device memory")                               \
    X(CU_FILE_CUDA_POINTER_RANGE_ERROR, 14, "range past the allocation")                       \
    X(CU_FILE_CUDA_CONTEXT_MISMATCH, 15, "GPU context mismatch")                               \
    X(CU_FILE_INVALID_MAPPING_SIZE, 16, "past the pinned size")                                \
    X(CU_FILE_INVALID_MAPPING_RANGE, 17, "past the mapped size")                               \
    X(CU_FILE_INVALID_FILE_TYPE, 18, "unsupported file type")                                  \
    X(CU_FILE_INVALID_FILE_OPEN_FLAG, 19, "unsupported open flags")                            \
    X(CU_FILE_DIO_NOT_SET, 20, "descriptor without O_DIRECT")                                  \
    X(CU_FILE_INVALID_VALUE, 22, "invalid argument")                                           \
    X(CU_FILE_MEMORY_ALREADY_REGISTERED, 23, "memory already registered")                      \
    X(CU_FILE_MEMORY_NOT_REGISTERED, 24, "memory not registered")                              \
    X(CU_FILE_PERMISSION_DENIED, 25, "permission denied")                                      \
    X(CU_FILE_DRIVER_ALREADY_OPEN, 26, "the driver is already open")                           \
    X(CU_FILE_HANDLE_NOT_REGISTERED, 27, "file handle not registered")                         \
    X(CU_FILE_HANDLE_ALREADY_REGISTERED, 28, "file already registered")                        \
    X(CU_FILE_DEVICE_NOT_FOUND, 29, "GPU not found")                                           \
    X(CU_FILE_INTERNAL_ERROR, 30, "internal error")                                            \
    X(CU_FILE_GETNEWFD_FAILED, 31, "could not open a new descriptor")                          \
    X(CU_FILE_NVFS_SETUP_ERROR, 33, "direct-path setup error")                                 \
    X(CU_FILE_IO_DISABLED, 34, "direct path disabled for this file")                           \
    X(CU_FILE_BATCH_SUBMIT_FAILED, 35, "batch submission failed")                              \
    X(CU_FILE_GPU_MEMORY_PINNING_FAILED, 36, "could not pin GPU memory")                       \
    X(CU_FILE_BATCH_FULL, 37, "batch full")                                                    \
    X(CU_FILE_ASYNC_NOT_SUPPORTED, 38, "stream-ordered I/O not supported")                     \
    X(CU_FILE_INTERNAL_BATCH_SETUP_ERROR, 39, "batch setup failed, retry")                     \
    X(CU_FILE_INTERNAL_BATCH_SUBMIT_ERROR, 40, "batch submission failed, retry")               \
    X(CU_FILE_INTERNAL_BATCH_GETSTATUS_ERROR, 41, "batch status failed, retry")                \
    X(CU_FILE_INTERNAL_BATCH_CANCEL_ERROR, 42, "batch cancel failed, retry")                   \
    X(CU_FILE_NOMEM_ERROR, 43, "out of memory, retry")                                         \
    X(CU_FILE_IO_ERROR, 44, "I/O error")                                                       \
    X(CU_FILE_INTERNAL_BUF_REGISTER_ERROR, 45, "buffer registration failed")                   \
    X(CU_FILE_HASH_OPR_ERROR, 46, "hash operation failed")                                     \
    X(CU_FILE_INVALID_CONTEXT_ERROR, 47, "invalid context")                                    \
    X(CU_FILE_NVFS_INTERNAL_DRIVER_ERROR, 48, "direct-path kernel driver internal error")      \
    X(CU_FILE_BATCH_NOCOMPAT_ERROR, 49, "compatibility mode is off")                           \
    X(CU_FILE_IO_MAX_ERROR, 50, "largest status")

#define HIPFILE_CUFILE_ENUM_VALUE(name, offset, text) \
    name = (offset) == 0 ? 0 : CUFILEOP_BASE_ERR + (offset),
typedef enum CUfileOpError { HIPFILE_CUFILE_STATUSES(HIPFILE_CUFILE_ENUM_VALUE) } CUfileOpError;
#undef HIPFILE_CUFILE_ENUM_VALUE

/* A static description of a status; never free it. */
static inline const char *cufileop_status_error(CUfileOpError status) {
    switch (status) {
#define HIPFILE_CUFILE_CASE(name, offset, text) \
    case name:                                  \
        return text;
        HIPFILE_CUFILE_STATUSES(HIPFILE_CUFILE_CASE)
#undef HIPFILE_CUFILE_CASE
    default:
        return "unknown status";
    }
}

/* Most calls' result: a cuFile status, and the GPU runtime's error when err is
 * CU_FILE_CUDA_DRIVER_ERROR (hipfile-rs reports the runtime's code it saw). */
typedef struct CUfileError {
    CUfileOpError err;
    CUresult cu_err;
} CUfileError_t;

/* Take a CUfileOpError, an int or an ssize_t result. */
#define IS_CUFILE_ERR(err) (abs((int)(err)) > CUFILEOP_BASE_ERR)
#define CUFILE_ERRSTR(err) cufileop_status_error((CUfileOpError)abs((int)(err)))
#define IS_CUDA_ERR(status) ((status).err == CU_FILE_CUDA_DRIVER_ERROR)
#define CU_FILE_CUDA_ERR(status) ((status).cu_err)

/* ----------------------------------------------------------------- driver */
/* Bit positions in CUfileDrvProps_t.nvfs.dstatusflags (10 is unused). */
typedef enum CUfileDriverStatusFlags {
    CU_FILE_LUSTRE_SUPPORTED = 0,
    CU_FILE_WEKAFS_SUPPORTED = 1,
    CU_FILE_NFS_SUPPORTED = 2,
    CU_FILE_GPFS_SUPPORTED = 3,
    CU_FILE_NVME_SUPPORTED = 4,
    CU_FILE_NVMEOF_SUPPORTED = 5,
    CU_FILE_SCSI_SUPPORTED = 6,
    CU_FILE_SCALEFLUX_CSD_SUPPORTED = 7,
    CU_FILE_NVMESH_SUPPORTED = 8,
    CU_FILE_BEEGFS_SUPPORTED = 9,
    CU_FILE_NVME_P2P_SUPPORTED = 11,
    CU_FILE_SCATEFS_SUPPORTED = 12,
    CU_FILE_VIRTIOFS_SUPPORTED = 13,
    CU_FILE_PANFS_SUPPORTED = 14,
    CU_FILE_MAX_TARGET_TYPES
} CUfileDriverStatusFlags_t;

/* Bit positions in CUfileDrvProps_t.nvfs.dcontrolflags. */
typedef enum CUfileDriverControlFlags {
    CU_FILE_USE_POLL_MODE = 0,
    CU_FILE_ALLOW_COMPAT_MODE = 1,
    CU_FILE_VANILLA_POSIX_IO_MODE = 2,
    CU_FILE_POSIX_IO_MODE = CU_FILE_VANILLA_POSIX_IO_MODE,
    CU_FILE_FALLBACK_IO_MODE = 4
} CUfileDriverControlFlags_t;

/* Bit positions in CUfileDrvProps_t.fflags. */
typedef enum CUfileFeatureFlags {
    CU_FILE_DYN_ROUTING_SUPPORTED = 0,
    CU_FILE_BATCH_IO_SUPPORTED = 1,
    CU_FILE_STREAMS_SUPPORTED = 2,
    CU_FILE_PARALLEL_IO_SUPPORTED = 3,
    CU_FILE_P2P_SUPPORTED = 4
} CUfileFeatureFlags_t;

/* Bit positions of the P2P flags (cuFileDriverGetP2PFlags), and the flags themselves. */
typedef enum CUfileP2PFlags {
    CUFILE_P2PDMA = 0,
    CUFILE_NVFS = 1,
    CUFILE_DMABUF = 2,
    CUFILE_C2C = 3,
    CUFILE_NVIDIA_PEERMEM = 4
} CUfileP2PFlags_t;

#define CU_FILE_P2P_FLAG_PCI_P2PDMA ((CUfileP2PFlags_t)(1 << CUFILE_P2PDMA))
#define CU_FILE_P2P_FLAG_NVFS ((CUfileP2PFlags_t)(1 << CUFILE_NVFS))
#define CU_FILE_P2P_FLAG_DMABUF ((CUfileP2PFlags_t)(1 << CUFILE_DMABUF))
#define CU_FILE_P2P_FLAG_C2C ((CUfileP2PFlags_t)(1 << CUFILE_C2C))

/* Driver properties; sizes in KiB. */
typedef struct CUfileDrvProps {
    struct {
        unsigned int major_version;
        unsigned int minor_version;
        size_t poll_thresh_size;
        size_t max_direct_io_size;
        unsigned int dstatusflags;
        unsigned int dcontrolflags;
    } nvfs;
    unsigned int fflags;
    unsigned int max_device_cache_size;
    unsigned int per_buffer_cache_size;
    unsigned int max_device_pinned_mem_size;
    unsigned int max_batch_io_size;
    unsigned int max_batch_io_timeout_msecs;
} CUfileDrvProps_t;

/* ------------------------------------------------------- files and buffers */
typedef struct sockaddr sockaddr_t;

typedef struct cufileRDMAInfo {
    int version;
    int desc_len;
    const char *desc_str;
} cufileRDMAInfo_t;

#define CU_FILE_RDMA_REGISTER 1
#define CU_FILE_RDMA_RELAXED_ORDERING (1 << 1)

/* What a user-space file system's RDMA callbacks may return (never returned by this library). */
#define CU_FILE_RDMA_ERR_BASE 6000
#define CU_FILE_RDMA_SUCCESS 0
#define CU_FILE_RDMA_RESET_TOKEN (CU_FILE_RDMA_ERR_BASE + 1)
#define CU_FILE_RDMA_RESET_TOKEN_FAILED (CU_FILE_RDMA_ERR_BASE + 2)

/* Operations of a user-space file system (not supported: registering one is
 * CU_FILE_IO_NOT_SUPPORTED). */
typedef struct CUfileFSOps {
    const char *(*fs_type)(const void *handle);
    int (*getRDMADeviceList)(const void *handle, sockaddr_t **hostaddrs);
    int (*getRDMADevicePriority)(const void *handle, char *, size_t, off_t, const sockaddr_t *hostaddr);
    ssize_t (*read)(const void *handle, char *, size_t, off_t, const cufileRDMAInfo_t *);
    ssize_t (*write)(const void *handle, const char *, size_t, off_t, const cufileRDMAInfo_t *);
} CUfileFSOps_t;

enum CUfileFileHandleType {
    CU_FILE_HANDLE_TYPE_OPAQUE_FD = 1,
    CU_FILE_HANDLE_TYPE_OPAQUE_WIN32 = 2,
    CU_FILE_HANDLE_TYPE_USERSPACE_FS = 3
};

typedef struct CUfileDescr_t {
    enum CUfileFileHandleType type;
    union {
        int fd;
        void *handle;
    } handle;
    const CUfileFSOps_t *fs_ops;
} CUfileDescr_t;

typedef void *CUfileHandle_t;

#if defined(__GNUC__)
#pragma GCC visibility push(default)
#endif

CUfileError_t cuFileHandleRegister(CUfileHandle_t *fh, CUfileDescr_t *descr);
void cuFileHandleDeregister(CUfileHandle_t fh);
CUfileError_t cuFileBufRegister(const void *bufPtr_base, size_t length, int flags);
CUfileError_t cuFileBufDeregister(const void *bufPtr_base);
/* Bytes moved; -1 with errno for an OS error; -CUfileOpError, or the runtime's error negated. */
ssize_t cuFileRead(CUfileHandle_t fh, void *bufPtr_base, size_t size, off_t file_offset, off_t bufPtr_offset);
ssize_t cuFileWrite(CUfileHandle_t fh, const void *bufPtr_base, size_t size, off_t file_offset,
                    off_t bufPtr_offset);

CUfileError_t cuFileDriverOpen(void);
/* Programs built with this header call cuFileDriverClose_v2; both are exported. */
CUfileError_t cuFileDriverClose(void);
#define cuFileDriverClose cuFileDriverClose_v2
CUfileError_t cuFileDriverClose(void);
long cuFileUseCount(void);
CUfileError_t cuFileDriverGetProperties(CUfileDrvProps_t *props);
CUfileError_t cuFileDriverSetPollMode(bool poll, size_t poll_threshold_size);
CUfileError_t cuFileDriverSetMaxDirectIOSize(size_t max_direct_io_size);
CUfileError_t cuFileDriverSetMaxCacheSize(size_t max_cache_size);
CUfileError_t cuFileDriverSetMaxPinnedMemSize(size_t max_pinned_size);

/* ------------------------------------------------------------------ batch */
typedef enum CUfileOpcode {
    CUFILE_READ = 0,
    CUFILE_WRITE
} CUfileOpcode_t;

typedef enum CUFILEStatus_enum {
    CUFILE_WAITING = 1 << 0,
    CUFILE_PENDING = 1 << 1,
    CUFILE_INVALID = 1 << 2,
    CUFILE_CANCELED = 1 << 3,
    CUFILE_COMPLETE = 1 << 4,
    CUFILE_TIMEOUT = 1 << 5,
    CUFILE_FAILED = 1 << 6
} CUfileStatus_t;

typedef enum cufileBatchMode {
    CUFILE_BATCH = 1
} CUfileBatchMode_t;

typedef struct CUfileIOParams {
    CUfileBatchMode_t mode;
    union {
        struct {
            void *devPtr_base;
            off_t file_offset;
            off_t devPtr_offset;
            size_t size;
        } batch;
    } u;
    CUfileHandle_t fh;
    CUfileOpcode_t opcode;
    void *cookie;
} CUfileIOParams_t;

/* ret: bytes moved, or a negative error stored in a size_t. */
typedef struct CUfileIOEvents {
    void *cookie;
    CUfileStatus_t status;
    size_t ret;
} CUfileIOEvents_t;

typedef void *CUfileBatchHandle_t;

CUfileError_t cuFileBatchIOSetUp(CUfileBatchHandle_t *batch_idp, unsigned nr);
CUfileError_t cuFileBatchIOSubmit(CUfileBatchHandle_t batch_idp, unsigned nr, CUfileIOParams_t *iocbp,
                                  unsigned int flags);
CUfileError_t cuFileBatchIOGetStatus(CUfileBatchHandle_t batch_idp, unsigned min_nr, unsigned *nr,
                                     CUfileIOEvents_t *iocbp, struct timespec *timeout);
CUfileError_t cuFileBatchIOCancel(CUfileBatchHandle_t batch_idp);
void cuFileBatchIODestroy(CUfileBatchHandle_t batch_idp);

/* ------------------------------------------------------------------ async */
#define CU_FILE_STREAM_FIXED_BUF_OFFSET 1
#define CU_FILE_STREAM_FIXED_FILE_OFFSET 2
#define CU_FILE_STREAM_FIXED_FILE_SIZE 4
#define CU_FILE_STREAM_PAGE_ALIGNED_INPUTS 8

CUfileError_t cuFileReadAsync(CUfileHandle_t fh, void *bufPtr_base, size_t *size_p, off_t *file_offset_p,
                              off_t *bufPtr_offset_p, ssize_t *bytes_read_p, CUstream stream);
CUfileError_t cuFileWriteAsync(CUfileHandle_t fh, void *bufPtr_base, size_t *size_p, off_t *file_offset_p,
                               off_t *bufPtr_offset_p, ssize_t *bytes_written_p, CUstream stream);
CUfileError_t cuFileStreamRegister(CUstream stream, unsigned flags);
CUfileError_t cuFileStreamDeregister(CUstream stream);

/* ------------------------------------------------------------ vector I/O */
/* One buffer of cuFileReadv/cuFileWritev: device or host memory, registered or not. */
typedef struct CUfileIOVec {
    void *base;
    size_t len;
} CUfileIOVec_t;

/* The buffers in order, from file_offset on; flags must be 0. Returns as cuFileRead. */
ssize_t cuFileReadv(CUfileHandle_t fh, const CUfileIOVec_t *iov, size_t iovcnt, off_t file_offset, unsigned flags);
ssize_t cuFileWritev(CUfileHandle_t fh, const CUfileIOVec_t *iov, size_t iovcnt, off_t file_offset,
                     unsigned flags);

/* 1000 * major + 10 * minor of the cuFile version served: 1200 (1150 under
 * HIPFILE_CUFILE_VERSION=1.15). */
CUfileError_t cuFileGetVersion(int *version);

/* No direct path here, so no topology: CU_FILE_INTERNAL_ERROR, no file written. */
CUfileError_t cuFileExportPCIeTopology(const char *filename);

/* ------------------------------------------------------------- parameters */
typedef enum CUFileSizeTConfigParameter_t {
    CUFILE_PARAM_PROFILE_STATS,
    CUFILE_PARAM_EXECUTION_MAX_IO_QUEUE_DEPTH,
    CUFILE_PARAM_EXECUTION_MAX_IO_THREADS,
    CUFILE_PARAM_EXECUTION_MIN_IO_THRESHOLD_SIZE_KB,
    CUFILE_PARAM_EXECUTION_MAX_REQUEST_PARALLELISM,
    CUFILE_PARAM_PROPERTIES_MAX_DIRECT_IO_SIZE_KB,
    CUFILE_PARAM_PROPERTIES_MAX_DEVICE_CACHE_SIZE_KB,
    CUFILE_PARAM_PROPERTIES_PER_BUFFER_CACHE_SIZE_KB,
    CUFILE_PARAM_PROPERTIES_MAX_DEVICE_PINNED_MEM_SIZE_KB,
    CUFILE_PARAM_PROPERTIES_IO_BATCHSIZE,
    CUFILE_PARAM_POLLTHRESHOLD_SIZE_KB,
    CUFILE_PARAM_PROPERTIES_BATCH_IO_TIMEOUT_MS
} CUFileSizeTConfigParameter_t;

typedef enum CUFileBoolConfigParameter_t {
    CUFILE_PARAM_PROPERTIES_USE_POLL_MODE,
    CUFILE_PARAM_PROPERTIES_ALLOW_COMPAT_MODE,
    CUFILE_PARAM_FORCE_COMPAT_MODE,
    CUFILE_PARAM_FS_MISC_API_CHECK_AGGRESSIVE,
    CUFILE_PARAM_EXECUTION_PARALLEL_IO,
    CUFILE_PARAM_PROFILE_NVTX,
    CUFILE_PARAM_PROPERTIES_ALLOW_SYSTEM_MEMORY,
    CUFILE_PARAM_USE_PCIP2PDMA,
    CUFILE_PARAM_PREFER_IO_URING,
    CUFILE_PARAM_FORCE_ODIRECT_MODE,
    CUFILE_PARAM_SKIP_TOPOLOGY_DETECTION,
    CUFILE_PARAM_STREAM_MEMOPS_BYPASS,
    CUFILE_PARAM_PROPERTIES_POSIX_IO_MODE,
    CUFILE_PARAM_GDS_FALLBACK_IO
} CUFileBoolConfigParameter_t;

typedef enum CUFileStringConfigParameter_t {
    CUFILE_PARAM_LOGGING_LEVEL,
    CUFILE_PARAM_ENV_LOGFILE_PATH,
    CUFILE_PARAM_LOG_DIR,
    CUFILE_PARAM_RDMA_TRANSPORT
} CUFileStringConfigParameter_t;

typedef enum CUFileArrayConfigParameter_t {
    CUFILE_PARAM_POSIX_POOL_SLAB_SIZE_KB,
    CUFILE_PARAM_POSIX_POOL_SLAB_COUNT,
    CUFILE_PARAM_GPU_BOUNCE_BUFFER_SLAB_SIZE_KB,
    CUFILE_PARAM_GPU_BOUNCE_BUFFER_SLAB_COUNT
} CUFileArrayConfigParameter_t;

CUfileError_t cuFileGetParameterSizeT(CUFileSizeTConfigParameter_t param, size_t *value);
CUfileError_t cuFileGetParameterBool(CUFileBoolConfigParameter_t param, bool *value);
CUfileError_t cuFileGetParameterString(CUFileStringConfigParameter_t param, char *desc_str, int len);
CUfileError_t cuFileGetParameterMinMaxValue(CUFileSizeTConfigParameter_t param, size_t *min_value,
                                            size_t *max_value);
CUfileError_t cuFileSetParameterSizeT(CUFileSizeTConfigParameter_t param, size_t value);
CUfileError_t cuFileSetParameterBool(CUFileBoolConfigParameter_t param, bool value);
CUfileError_t cuFileSetParameterString(CUFileStringConfigParameter_t param, const char *desc_str);

/* ------------------------------------------------------------- statistics */
CUfileError_t cuFileSetStatsLevel(int level);
CUfileError_t cuFileGetStatsLevel(int *level);

#define CUFILE_GPU_UUID_LEN 16

typedef struct CUfileOpCounter {
    uint64_t ok;
    uint64_t err;
} CUfileOpCounter_t;

typedef struct CUfileStatsLevel1 {
    CUfileOpCounter_t read_ops;
    CUfileOpCounter_t write_ops;
    CUfileOpCounter_t hdl_register_ops;
    CUfileOpCounter_t hdl_deregister_ops;
    CUfileOpCounter_t buf_register_ops;
    CUfileOpCounter_t buf_deregister_ops;
    uint64_t read_bytes;
    uint64_t write_bytes;
    uint64_t read_bw_bytes_per_sec;
    uint64_t write_bw_bytes_per_sec;
    uint64_t read_lat_avg_us;
    uint64_t write_lat_avg_us;
    uint64_t read_ops_per_sec;
    uint64_t write_ops_per_sec;
    uint64_t read_lat_sum_us;
    uint64_t write_lat_sum_us;
    CUfileOpCounter_t batch_submit_ops;
    CUfileOpCounter_t batch_complete_ops;
    CUfileOpCounter_t batch_setup_ops;
    CUfileOpCounter_t batch_cancel_ops;
    CUfileOpCounter_t batch_destroy_ops;
    CUfileOpCounter_t batch_enqueued_ops;
    CUfileOpCounter_t batch_posix_enqueued_ops;
    CUfileOpCounter_t batch_processed_ops;
    CUfileOpCounter_t batch_posix_processed_ops;
    CUfileOpCounter_t batch_nvfs_submit_ops;
    CUfileOpCounter_t batch_p2p_submit_ops;
    CUfileOpCounter_t batch_aio_submit_ops;
    CUfileOpCounter_t batch_iouring_submit_ops;
    CUfileOpCounter_t batch_mixed_io_submit_ops;
    CUfileOpCounter_t batch_total_submit_ops;
    uint64_t batch_read_bytes;
    uint64_t batch_write_bytes;
    uint64_t batch_read_bw_bytes;
    uint64_t batch_write_bw_bytes;
    uint64_t batch_submit_lat_avg_us;
    uint64_t batch_completion_lat_avg_us;
    uint64_t batch_submit_ops_per_sec;
    uint64_t batch_complete_ops_per_sec;
    uint64_t batch_submit_lat_sum_us;
    uint64_t batch_completion_lat_sum_us;
    uint64_t last_batch_read_bytes;
    uint64_t last_batch_write_bytes;
    /* cuFile 1.19: vector I/O, counted apart from the reads and writes above. Programs built
     * against an older header (512-byte level 1) need HIPFILE_CUFILE_VERSION=1.15. */
    CUfileOpCounter_t readv_ops;
    CUfileOpCounter_t writev_ops;
    uint64_t readv_bytes;
    uint64_t writev_bytes;
    uint64_t readv_bw_bytes_per_sec;
    uint64_t writev_bw_bytes_per_sec;
    uint64_t readv_lat_avg_us;
    uint64_t writev_lat_avg_us;
    uint64_t readv_ops_per_sec;
    uint64_t writev_ops_per_sec;
    uint64_t readv_lat_sum_us;
    uint64_t writev_lat_sum_us;
} CUfileStatsLevel1_t;

typedef struct CUfileStatsLevel2 {
    CUfileStatsLevel1_t basic;
    uint64_t read_size_kb_hist[32];
    uint64_t write_size_kb_hist[32];
} CUfileStatsLevel2_t;

typedef struct CUfilePerGpuStats {
    char uuid[CUFILE_GPU_UUID_LEN];
    uint64_t read_bytes;
    uint64_t read_bw_bytes_per_sec;
    uint64_t read_utilization;
    uint64_t read_duration_us;
    uint64_t n_total_reads;
    uint64_t n_p2p_reads;
    uint64_t n_nvfs_reads;
    uint64_t n_posix_reads;
    uint64_t n_unaligned_reads;
    uint64_t n_dr_reads;
    uint64_t n_sparse_regions;
    uint64_t n_inline_regions;
    uint64_t n_reads_err;
    uint64_t writes_bytes;
    uint64_t write_bw_bytes_per_sec;
    uint64_t write_utilization;
    uint64_t write_duration_us;
    uint64_t n_total_writes;
    uint64_t n_p2p_writes;
    uint64_t n_nvfs_writes;
    uint64_t n_posix_writes;
    uint64_t n_unaligned_writes;
    uint64_t n_dr_writes;
    uint64_t n_writes_err;
    uint64_t n_mmap;
    uint64_t n_mmap_ok;
    uint64_t n_mmap_err;
    uint64_t n_mmap_free;
    uint64_t reg_bytes;
} CUfilePerGpuStats_t;

typedef struct CUfileStatsLevel3 {
    CUfileStatsLevel2_t detailed;
    uint32_t num_gpus;
    CUfilePerGpuStats_t per_gpu_stats[16];
} CUfileStatsLevel3_t;

CUfileError_t cuFileStatsStart(void);
CUfileError_t cuFileStatsStop(void);
CUfileError_t cuFileStatsReset(void);
CUfileError_t cuFileGetStatsL1(CUfileStatsLevel1_t *stats);
CUfileError_t cuFileGetStatsL2(CUfileStatsLevel2_t *stats);
CUfileError_t cuFileGetStatsL3(CUfileStatsLevel3_t *stats);

CUfileError_t cuFileGetBARSizeInKB(int gpuIndex, size_t *barSize);
CUfileError_t cuFileSetParameterPosixPoolSlabArray(const size_t *size_values, const size_t *count_values,
                                                   int len);
CUfileError_t cuFileGetParameterPosixPoolSlabArray(size_t *size_values, size_t *count_values, int len);
/* Kept and read back (sizes in KiB, multiples of 4, ascending); none until set. */
CUfileError_t cuFileSetParameterGpuBounceBufferSlabArray(const size_t *size_values, const size_t *count_values,
                                                         int len);
CUfileError_t cuFileGetParameterGpuBounceBufferSlabArray(size_t *size_values, size_t *count_values, int len);

/* As NVIDIA's library without the GDS module: no flags until set; only the platform's flag
 * (PCI P2PDMA on x86-64, C2C on Arm) can be set. */
CUfileError_t cuFileDriverGetP2PFlags(CUfileDriverStatusFlags_t status_flag, CUfileP2PFlags_t *p2p_flags);
CUfileError_t cuFileDriverSetP2PFlags(CUfileDriverStatusFlags_t status_flag, CUfileP2PFlags_t p2p_flags);

#if defined(__GNUC__)
#pragma GCC visibility pop
#endif

#ifdef __cplusplus
}
#endif

#endif /* HIPFILE_CUFILE_H */
