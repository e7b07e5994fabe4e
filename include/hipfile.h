/*
 * hipfile.h: the C API of hipfile-rs, source-compatible with AMD's hipFile header.
 *
 * Types, enum names and values, struct layouts and macros are AMD's. The version is that of
 * upstream's API this library implements: 0.5.0, the release that added the statistics calls
 * (docs/compat.md, "Version"). Only functions the library exports are declared:
 * tests/header.rs checks that every prototype here matches an export and that every export is
 * declared.
 *
 * Link with -lhipfile. Include <hip/hip_runtime_api.h> requirements apply: define
 * __HIP_PLATFORM_AMD__ (or __HIP_PLATFORM_NVIDIA__) when compiling.
 */
#ifndef HIPFILE_H
#define HIPFILE_H

#include <hip/hip_runtime_api.h>
#include <stdbool.h>
#include <stdint.h>
#include <stdlib.h> /* abs() in HIPFILE_ERRSTR and IS_HIPFILE_ERR */
#include <sys/socket.h> /* struct sockaddr in hipFileFSOps_t */
#include <time.h>       /* struct timespec in hipFileBatchIOGetStatus */
#include <sys/types.h>

#if defined(__GNUC__)
#define HIPFILE_API __attribute__((visibility("default")))
#else
#define HIPFILE_API
#endif

/* hipFileError_t should not be ignored; C++17 and C23 can say so. */
#if (defined(__cplusplus) && __cplusplus >= 201703L) || \
    (defined(__STDC_VERSION__) && __STDC_VERSION__ >= 202311L)
#define __HIPFILE_NODISCARD [[nodiscard]]
#else
#define __HIPFILE_NODISCARD
#endif

#ifdef __cplusplus
extern "C" {
#endif

/* ---------------------------------------------------------------- version */

#define HIPFILE_VERSION_MAJOR 0
#define HIPFILE_VERSION_MINOR 5
#define HIPFILE_VERSION_PATCH 0

/* File offsets. */
typedef off_t hoff_t;

/* ----------------------------------------------------------------- errors */

#define HIPFILE_BASE_ERR 5000

/*
 * Status codes. Functions returning ssize_t report -1 (with errno) for system errors and
 * the negated code for hipFile errors. 5021 and 5032 are not used.
 */
typedef enum hipFileOpError {
    hipFileSuccess = 0,
    hipFileDriverNotInitialized = HIPFILE_BASE_ERR + 1,
    hipFileDriverInvalidProps = HIPFILE_BASE_ERR + 2,
    hipFileDriverUnsupportedLimit = HIPFILE_BASE_ERR + 3,
    hipFileDriverVersionMismatch = HIPFILE_BASE_ERR + 4,
    hipFileDriverVersionReadError = HIPFILE_BASE_ERR + 5,
    hipFileDriverClosing = HIPFILE_BASE_ERR + 6,
    hipFilePlatformNotSupported = HIPFILE_BASE_ERR + 7,
    hipFileIONotSupported = HIPFILE_BASE_ERR + 8,
    hipFileDeviceNotSupported = HIPFILE_BASE_ERR + 9,
    hipFileDriverError = HIPFILE_BASE_ERR + 10,
    hipFileHipDriverError = HIPFILE_BASE_ERR + 11,
    hipFileHipPointerInvalid = HIPFILE_BASE_ERR + 12,
    hipFileHipMemoryTypeInvalid = HIPFILE_BASE_ERR + 13,
    hipFileHipPointerRangeError = HIPFILE_BASE_ERR + 14,
    hipFileHipContextMismatch = HIPFILE_BASE_ERR + 15,
    hipFileInvalidMappingSize = HIPFILE_BASE_ERR + 16,
    hipFileInvalidMappingRange = HIPFILE_BASE_ERR + 17,
    hipFileInvalidFileType = HIPFILE_BASE_ERR + 18,
    hipFileInvalidFileOpenFlag = HIPFILE_BASE_ERR + 19,
    hipFileDIONotSet = HIPFILE_BASE_ERR + 20,
    hipFileInvalidValue = HIPFILE_BASE_ERR + 22,
    hipFileMemoryAlreadyRegistered = HIPFILE_BASE_ERR + 23,
    hipFileMemoryNotRegistered = HIPFILE_BASE_ERR + 24,
    hipFilePermissionDenied = HIPFILE_BASE_ERR + 25,
    hipFileDriverAlreadyOpen = HIPFILE_BASE_ERR + 26,
    hipFileHandleNotRegistered = HIPFILE_BASE_ERR + 27,
    hipFileHandleAlreadyRegistered = HIPFILE_BASE_ERR + 28,
    hipFileDeviceNotFound = HIPFILE_BASE_ERR + 29,
    hipFileInternalError = HIPFILE_BASE_ERR + 30,
    hipFileGetNewFDFailed = HIPFILE_BASE_ERR + 31,
    hipFileDriverSetupError = HIPFILE_BASE_ERR + 33,
    hipFileIODisabled = HIPFILE_BASE_ERR + 34,
    hipFileBatchSubmitFailed = HIPFILE_BASE_ERR + 35,
    hipFileGPUMemoryPinningFailed = HIPFILE_BASE_ERR + 36,
    hipFileBatchFull = HIPFILE_BASE_ERR + 37,
    hipFileAsyncNotSupported = HIPFILE_BASE_ERR + 38,
    hipFileIOMaxError = HIPFILE_BASE_ERR + 39 /* the largest code */
} hipFileOpError_t;

/* A static description of a status code; never free it. */
HIPFILE_API
const char *hipFileGetOpErrorString(hipFileOpError_t status);

/* The result of most calls: a hipFile status, and the HIP runtime's error when the status
 * is hipFileHipDriverError (hipSuccess otherwise). */
typedef struct __HIPFILE_NODISCARD hipFileError {
    hipFileOpError_t err;
    hipError_t hip_drv_err;
} hipFileError_t;

/* Both take a hipFileOpError_t, an int or an ssize_t result. The argument is converted to
 * int before abs(), so that -Wall -Wextra -Werror builds accept every one of them (gcc gives
 * an enum without negative values an unsigned type, and warns on abs() of one). */
#define IS_HIPFILE_ERR(hip_op_err) (abs((int)(hip_op_err)) > HIPFILE_BASE_ERR)
#define HIPFILE_ERRSTR(hip_op_err) hipFileGetOpErrorString((hipFileOpError_t)abs((int)(hip_op_err)))
#ifndef IS_HIP_DRV_ERR
#define IS_HIP_DRV_ERR(hip_err) (hip_err.err == hipFileHipDriverError)
#endif
#ifndef HIP_DRV_ERR
#define HIP_DRV_ERR(hip_err) (hip_err.hip_drv_err)
#endif

/* ----------------------------------------------------------------- driver */

/* Bit positions in hipFileDriverProps_t.nvfs.driver_status_flags (10 is reserved). */
typedef enum hipFileDriverStatusFlags {
    hipFileLustreSupported = 0,
    hipFileWekaFSSupported = 1,
    hipFileNFSSupported = 2,
    hipFileGPFSSupported = 3,
    hipFileNVMeSupported = 4,
    hipFileNVMeoFSupported = 5,
    hipFileSCSISupported = 6,
    hipFileScaleFluxCSDSupported = 7,
    hipFileNVMeshSupported = 8,
    hipFileBeeGFSSupported = 9,
    hipFileNVMeP2PSupported = 11,
    hipFileScatefsSupported = 12
} hipFileDriverStatusFlags_t;

/* Bit positions in hipFileDriverProps_t.nvfs.driver_control_flags. */
typedef enum hipFileDriverControlFlags {
    hipFileUsePollMode = 0,
    hipFileAllowCompatMode = 1
} hipFileDriverControlFlags_t;

/* Bit positions in hipFileDriverProps_t.feature_flags. */
typedef enum hipFileFeatureFlags {
    hipFileDynRoutingSupported = 0,
    hipFileBatchIOSupported = 1,
    hipFileStreamsSupported = 2,
    hipFileParallelIOSupported = 3
} hipFileFeatureFlags_t;

/* Driver properties; sizes in KiB. */
typedef struct hipFileDriverProps {
    struct {
        unsigned major_version;
        unsigned minor_version;
        uint64_t poll_thresh_size;
        uint64_t max_direct_io_size;
        unsigned driver_status_flags;
        unsigned driver_control_flags;
    } nvfs;
    unsigned feature_flags;
    uint64_t max_device_cache_size;
    uint64_t per_buffer_cache_size;
    uint64_t max_device_pinned_mem_size;
    unsigned max_batch_io_count;
    unsigned max_batch_io_timeout_msecs;
} hipFileDriverProps_t;

/* The driver's properties (sizes in KiB): the open driver's, or while it is closed those the
 * next open would have; does not open the driver. */
HIPFILE_API
hipFileError_t hipFileDriverGetProperties(hipFileDriverProps_t *props);

/* Stage, like the parameters they name, values for the next open (hipFileDriverAlreadyOpen
 * while open): poll mode and its threshold, the direct-I/O size (the bounce chunk), the device
 * cache size, the pinned memory limit; sizes in KiB. */
HIPFILE_API
hipFileError_t hipFileDriverSetPollMode(bool poll, size_t poll_threshold_size);

HIPFILE_API
hipFileError_t hipFileDriverSetMaxDirectIOSize(size_t max_direct_io_size);

HIPFILE_API
hipFileError_t hipFileDriverSetMaxCacheSize(size_t max_cache_size);

HIPFILE_API
hipFileError_t hipFileDriverSetMaxPinnedMemSize(size_t max_pinned_size);

/* Opens the driver (increments its use count). Optional: the first handle or buffer
 * registration opens it too. */
HIPFILE_API
hipFileError_t hipFileDriverOpen(void);

/* Decrements the use count; at zero every registration is dropped. */
HIPFILE_API
hipFileError_t hipFileDriverClose(void);

/* The driver's use count. */
HIPFILE_API
int64_t hipFileUseCount(void);

/* ------------------------------------------------------------------- RDMA */

typedef struct hipFileRDMAInfo {
    int version;
    int desc_len;
    const char *desc_str;
} hipFileRDMAInfo_t;

#define HIPFILE_RDMA_REGISTER 1
#define HIPFILE_RDMA_RELAXED_ORDERING (1 << 1)

/* ------------------------------------------------------- files and buffers */

/* Operations of a user-space (RDMA) file system. */
typedef struct hipFileFSOps {
    const char *(*fs_type)(void *handle);
    int (*getRDMADeviceList)(void *handle, struct sockaddr **hostaddrs);
    int (*getRDMADevicePriority)(void *handle, char *, size_t, hoff_t, struct sockaddr *hostaddr);
    ssize_t (*read)(void *handle, char *, size_t, hoff_t, hipFileRDMAInfo_t *);
    ssize_t (*write)(void *handle, const char *, size_t, hoff_t, hipFileRDMAInfo_t *);
} hipFileFSOps_t;

typedef enum hipFileFileHandleType {
    hipFileHandleTypeOpaqueFD = 1,    /* handle.fd, a POSIX descriptor */
    hipFileHandleTypeOpaqueWin32 = 2, /* handle.hFile (not supported on Linux) */
    hipFileHandleTypeUserspaceFS = 3  /* handle.fd and fs_ops (not supported) */
} hipFileFileHandleType_t;

/* What hipFileHandleRegister registers. */
typedef struct hipFileDescr {
    hipFileFileHandleType_t type;
    union {
        int fd;
        void *hFile;
    } handle;
    const hipFileFSOps_t *fs_ops;
} hipFileDescr_t;

/* A registered file: an opaque value, not a pointer. */
typedef void *hipFileHandle_t;

/* Registers an open file (the descriptor stays the caller's) and stores its handle in *fh. */
HIPFILE_API
hipFileError_t hipFileHandleRegister(hipFileHandle_t *fh, hipFileDescr_t *descr);

/* Forgets a registered file; unknown handles are ignored. */
HIPFILE_API
void hipFileHandleDeregister(hipFileHandle_t fh);

/* Registers device memory [buffer_base, buffer_base + length); flags are kept, unused. */
HIPFILE_API
hipFileError_t hipFileBufRegister(const void *buffer_base, size_t length, int flags);

/* Forgets a registered buffer (by its exact base address). */
HIPFILE_API
hipFileError_t hipFileBufDeregister(const void *buffer_base);

/*
 * Reads up to size bytes (at most 0x7ffff000 per call) at file_offset into device memory at
 * buffer_base + buffer_offset; buffer_base need not be registered. Returns the bytes read
 * (fewer at end of file), -1 with errno for a system error, or a negated hipFileOpError_t.
 */
HIPFILE_API
ssize_t hipFileRead(hipFileHandle_t fh, void *buffer_base, size_t size, hoff_t file_offset,
                    hoff_t buffer_offset);

/* Writes size bytes from device memory to the file; returns as hipFileRead. */
HIPFILE_API
ssize_t hipFileWrite(hipFileHandle_t fh, const void *buffer_base, size_t size, hoff_t file_offset,
                     hoff_t buffer_offset);

/* ------------------------------------------------------------------ batch */

typedef enum hipFileOpcode {
    hipFileBatchRead = 0,
    hipFileBatchWrite = 1
} hipFileOpcode_t;

typedef enum hipFileStatus {
    hipFileWaiting = 1 << 0,
    hipFilePending = 1 << 1,
    hipFileInvalid = 1 << 2,
    hipFileCanceled = 1 << 3,
    hipFileComplete = 1 << 4,
    hipFileTimeout = 1 << 5,
    hipFileFailed = 1 << 6
} hipFileStatus_t;

typedef enum hipFileBatchMode {
    hipFileBatch = 1
} hipFileBatchMode_t;

typedef struct hipFileIOParams {
    hipFileBatchMode_t mode;
    union {
        struct {
            void *devPtr_base;
            int64_t file_offset;
            int64_t devPtr_offset;
            size_t size;
        } batch;
    } u;
    hipFileHandle_t fh;
    hipFileOpcode_t opcode;
    void *cookie;
} hipFileIOParams_t;

/* ret: bytes moved, or a negative errno stored in a size_t. */
typedef struct hipFileIOEvents {
    void *cookie;
    hipFileStatus_t status;
    size_t ret;
} hipFileIOEvents_t;

typedef void *hipFileBatchHandle_t;

/* A batch of up to max_nr (1 to 128) entries, stored in *batch_idp; needs no open driver. */
HIPFILE_API
hipFileError_t hipFileBatchIOSetUp(hipFileBatchHandle_t *batch_idp, unsigned max_nr);

/* Checks the nr entries of iocbp as hipFileRead/hipFileWrite would, all before any runs
 * (hipFileBatchFull past the batch's capacity), then runs them. flags is unused. */
HIPFILE_API
hipFileError_t hipFileBatchIOSubmit(hipFileBatchHandle_t batch_idp, unsigned nr, hipFileIOParams_t *iocbp,
                                    unsigned flags);

/* Waits until min_nr entries have finished, none is left, or timeout passes (NULL: no limit),
 * then stores up to *nr events in iocbp and their number in *nr. */
HIPFILE_API
hipFileError_t hipFileBatchIOGetStatus(hipFileBatchHandle_t batch_idp, unsigned min_nr, unsigned *nr,
                                       hipFileIOEvents_t *iocbp, struct timespec *timeout);

/* Entries not started never run, running ones are waited for; the batch is reusable. */
HIPFILE_API
hipFileError_t hipFileBatchIOCancel(hipFileBatchHandle_t batch_idp);

/* Cancels and forgets the batch (NULL is ignored); nothing of it touches memory afterwards. */
HIPFILE_API
void hipFileBatchIODestroy(hipFileBatchHandle_t batch_idp);

/* ------------------------------------------------------------------ async */

#define HIPFILE_STREAM_FIXED_BUF_OFFSET 1
#define HIPFILE_STREAM_FIXED_FILE_OFFSET (1 << 1)
#define HIPFILE_STREAM_FIXED_FILE_SIZE (1 << 2)
#define HIPFILE_STREAM_PAGE_ALIGNED_INPUTS (1 << 3)
#define HIPFILE_STREAM_FLAGS_MASK 0xf

/* Queues a read of *size_p bytes at *file_offset_p into buffer_base + *buffer_offset_p on
 * stream: it runs after the work queued before it and before the work queued after it. The
 * values are read when it runs (at this call for those the stream's FIXED flags name); the
 * size may shrink by then, not grow. The result (bytes, or a negative error) is stored in
 * *bytes_read_p when it is done; a size of 0 stores 0 at once. The pointers must stay valid
 * until then. */
HIPFILE_API
hipFileError_t hipFileReadAsync(hipFileHandle_t fh, void *buffer_base, size_t *size_p, hoff_t *file_offset_p,
                                hoff_t *buffer_offset_p, ssize_t *bytes_read_p, hipStream_t stream);

/* The write counterpart of hipFileReadAsync. */
HIPFILE_API
hipFileError_t hipFileWriteAsync(hipFileHandle_t fh, void *buffer_base, size_t *size_p, hoff_t *file_offset_p,
                                 hoff_t *buffer_offset_p, ssize_t *bytes_written_p, hipStream_t stream);

/* Registers stream with HIPFILE_STREAM_* flags (within HIPFILE_STREAM_FLAGS_MASK); twice is
 * hipFileInvalidValue. Needs no open driver. */
HIPFILE_API
hipFileError_t hipFileStreamRegister(hipStream_t stream, unsigned flags);

/* Forgets a registered stream's flags; an unregistered stream is hipFileInvalidValue. */
HIPFILE_API
hipFileError_t hipFileStreamDeregister(hipStream_t stream);

/* ------------------------------------------------------------------- core */

/* The API version (HIPFILE_VERSION_*); null arguments are skipped. */
HIPFILE_API
hipFileError_t hipFileGetVersion(unsigned *major, unsigned *minor, unsigned *patch);

/* ------------------------------------------------------------- parameters */

typedef enum hipFileSizeTConfigParameter_t {
    hipFileParamProfileStats,
    hipFileParamExecutionMaxIOQueueDepth,
    hipFileParamExecutionMaxIOThreads,
    hipFileParamExecutionMinIOThresholdSizeKB,
    hipFileParamExecutionMaxRequestParallelism,
    hipFileParamPropertiesMaxDirectIOSizeKB,
    hipFileParamPropertiesMaxDeviceCacheSizeKB,
    hipFileParamPropertiesPerBufferCacheSizeKB,
    hipFileParamPropertiesMaxDevicePinnedMemSizeKB,
    hipFileParamPropertiesIOBatchsize,
    hipFileParamPollthresholdSizeKB,
    hipFileParamPropertiesBatchIOTimeoutMs
} hipFileSizeTConfigParameter_t;

typedef enum hipFileBoolConfigParameter_t {
    hipFileParamPropertiesUsePollMode,
    hipFileParamPropertiesAllowCompatMode,
    hipFileParamForceCompatMode,
    hipFileParamFsMiscApiCheckAggressive,
    hipFileParamExecutionParallelIO,
    hipFileParamProfileNvtx,
    hipFileParamPropertiesAllowSystemMemory,
    hipFileParamUsePcip2pdma,
    hipFileParamPreferIOUring,
    hipFileParamForceOdirectMode,
    hipFileParamSkipTopologyDetection,
    hipFileParamStreamMemopsBypass
} hipFileBoolConfigParameter_t;

typedef enum hipFileStringConfigParameter_t {
    hipFileParamLoggingLevel,
    hipFileParamEnvLogfilePath,
    hipFileParamLogDir,
    /* hipfile-rs's, apart from upstream's values: the page-cache policy, "auto", "keep" or
     * "bypass" (HIPFILE_PAGE_CACHE; docs/semantics.md section 16). */
    hipFileParamPageCache = 1000
} hipFileStringConfigParameter_t;

/* Parameters: a value set while the driver is closed is staged and applied at the next open;
 * while open the value in use is read back, and setting one is hipFileDriverAlreadyOpen; the
 * defaults are back after the driver closes. Unknown parameters and values out of range are
 * hipFileInvalidValue. */
HIPFILE_API
hipFileError_t hipFileGetParameterSizeT(hipFileSizeTConfigParameter_t param, size_t *value);

HIPFILE_API
hipFileError_t hipFileGetParameterBool(hipFileBoolConfigParameter_t param, bool *value);

/* Writes the value and its NUL into desc_str; hipFileInvalidValue (nothing written) if len
 * bytes do not hold them. */
HIPFILE_API
hipFileError_t hipFileGetParameterString(hipFileStringConfigParameter_t param, char *desc_str, int len);

HIPFILE_API
hipFileError_t hipFileSetParameterSizeT(hipFileSizeTConfigParameter_t param, size_t value);

HIPFILE_API
hipFileError_t hipFileSetParameterBool(hipFileBoolConfigParameter_t param, bool value);

HIPFILE_API
hipFileError_t hipFileSetParameterString(hipFileStringConfigParameter_t param, const char *desc_str);

/* ------------------------------------------------------------------ stats */

#define HIPFILE_MAX_GPUS 16
#define HIPFILE_GPU_UUID_LEN 16

typedef struct hipFileOpCounter {
    uint64_t ok;
    uint64_t err;
} hipFileOpCounter_t;

typedef struct hipFileStatsLevel1 {
    hipFileOpCounter_t read_ops;
    hipFileOpCounter_t write_ops;
    hipFileOpCounter_t hdl_register_ops;
    hipFileOpCounter_t hdl_deregister_ops;
    hipFileOpCounter_t buf_register_ops;
    hipFileOpCounter_t buf_deregister_ops;
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
    hipFileOpCounter_t batch_submit_ops;
    hipFileOpCounter_t batch_complete_ops;
    hipFileOpCounter_t batch_setup_ops;
    hipFileOpCounter_t batch_cancel_ops;
    hipFileOpCounter_t batch_destroy_ops;
    hipFileOpCounter_t batch_enqueued_ops;
    hipFileOpCounter_t batch_posix_enqueued_ops;
    hipFileOpCounter_t batch_processed_ops;
    hipFileOpCounter_t batch_posix_processed_ops;
    hipFileOpCounter_t batch_nvfs_submit_ops;
    hipFileOpCounter_t batch_p2p_submit_ops;
    hipFileOpCounter_t batch_aio_submit_ops;
    hipFileOpCounter_t batch_iouring_submit_ops;
    hipFileOpCounter_t batch_mixed_io_submit_ops;
    hipFileOpCounter_t batch_total_submit_ops;
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
} hipFileStatsLevel1_t;

typedef struct hipFileStatsLevel2 {
    hipFileStatsLevel1_t basic;
    uint64_t read_size_kb_hist[32];
    uint64_t write_size_kb_hist[32];
} hipFileStatsLevel2_t;

typedef struct hipFilePerGpuStats {
    char uuid[HIPFILE_GPU_UUID_LEN];
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
    uint64_t write_bytes;
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
} hipFilePerGpuStats_t;

typedef struct hipFileStatsLevel3 {
    hipFileStatsLevel2_t detailed;
    uint32_t num_gpus;
    hipFilePerGpuStats_t per_gpu_stats[HIPFILE_MAX_GPUS];
} hipFileStatsLevel3_t;

/* The counters now (NULL: hipFileInvalidValue). HIPFILE_STATS_LEVEL (0 to 3, default 1) decides
 * what is counted; fields not counted are zero. */
HIPFILE_API
hipFileError_t hipFileGetStatsL1(hipFileStatsLevel1_t *stats);

HIPFILE_API
hipFileError_t hipFileGetStatsL2(hipFileStatsLevel2_t *stats);

HIPFILE_API
hipFileError_t hipFileGetStatsL3(hipFileStatsLevel3_t *stats);

#ifdef __cplusplus
}
#endif

/* Not part of the API. */
#undef __HIPFILE_NODISCARD

#endif /* HIPFILE_H */
