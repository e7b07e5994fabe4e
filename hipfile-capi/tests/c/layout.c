/* The sizes and offsets of AMD's hipfile.h on x86-64 (semantics §10), and the enum values a
 * program may have compiled in. Checked at compile time, in C11 and C++17. */
#include <hipfile.h>

#include <stddef.h>

#ifdef __cplusplus
#define STATIC_ASSERT static_assert
#else
#define STATIC_ASSERT _Static_assert
#endif

STATIC_ASSERT(sizeof(hipFileError_t) == 8, "hipFileError_t");
STATIC_ASSERT(offsetof(hipFileError_t, hip_drv_err) == 4, "hipFileError_t.hip_drv_err");

STATIC_ASSERT(sizeof(hipFileDriverProps_t) == 72, "hipFileDriverProps_t");
STATIC_ASSERT(offsetof(hipFileDriverProps_t, feature_flags) == 32, "feature_flags");
STATIC_ASSERT(offsetof(hipFileDriverProps_t, max_device_cache_size) == 40, "max_device_cache_size");
STATIC_ASSERT(offsetof(hipFileDriverProps_t, max_batch_io_count) == 64, "max_batch_io_count");

STATIC_ASSERT(sizeof(hipFileRDMAInfo_t) == 16, "hipFileRDMAInfo_t");
STATIC_ASSERT(sizeof(hipFileFSOps_t) == 40, "hipFileFSOps_t");

STATIC_ASSERT(sizeof(hipFileDescr_t) == 24, "hipFileDescr_t");
STATIC_ASSERT(offsetof(hipFileDescr_t, handle) == 8, "hipFileDescr_t.handle");
STATIC_ASSERT(offsetof(hipFileDescr_t, fs_ops) == 16, "hipFileDescr_t.fs_ops");

STATIC_ASSERT(sizeof(hipFileIOParams_t) == 64, "hipFileIOParams_t");
STATIC_ASSERT(offsetof(hipFileIOParams_t, u) == 8, "hipFileIOParams_t.u");
STATIC_ASSERT(offsetof(hipFileIOParams_t, fh) == 40, "hipFileIOParams_t.fh");
STATIC_ASSERT(offsetof(hipFileIOParams_t, opcode) == 48, "hipFileIOParams_t.opcode");
STATIC_ASSERT(offsetof(hipFileIOParams_t, cookie) == 56, "hipFileIOParams_t.cookie");
STATIC_ASSERT(sizeof(hipFileIOEvents_t) == 24, "hipFileIOEvents_t");

STATIC_ASSERT(sizeof(hipFileStatsLevel1_t) == 512, "hipFileStatsLevel1_t");
STATIC_ASSERT(sizeof(hipFileStatsLevel2_t) == 512 + 2 * 32 * 8, "hipFileStatsLevel2_t");
STATIC_ASSERT(sizeof(hipFilePerGpuStats_t) == 16 + 29 * 8, "hipFilePerGpuStats_t");

STATIC_ASSERT(sizeof(hoff_t) == 8, "hoff_t");
STATIC_ASSERT(sizeof(hipFileOpError_t) == sizeof(int), "hipFileOpError_t");

STATIC_ASSERT(hipFileDriverNotInitialized == 5001 && hipFileDIONotSet == 5020, "codes 5001-5020");
STATIC_ASSERT(hipFileInvalidValue == 5022 && hipFileGetNewFDFailed == 5031, "codes 5022-5031");
STATIC_ASSERT(hipFileDriverSetupError == 5033 && hipFileIOMaxError == 5039, "codes 5033-5039");
STATIC_ASSERT(hipFileNVMeP2PSupported == 11 && hipFileScatefsSupported == 12, "status flags");
STATIC_ASSERT(hipFileHandleTypeOpaqueFD == 1 && hipFileHandleTypeUserspaceFS == 3, "handle types");
STATIC_ASSERT(hipFileFailed == 64 && hipFileBatch == 1 && hipFileBatchWrite == 1, "batch enums");
STATIC_ASSERT(hipFileParamPropertiesBatchIOTimeoutMs == 11, "size_t parameters");
STATIC_ASSERT(hipFileParamStreamMemopsBypass == 11, "bool parameters");
STATIC_ASSERT(hipFileParamLogDir == 2, "string parameters");
STATIC_ASSERT(HIPFILE_STREAM_FLAGS_MASK == 0xf && HIPFILE_RDMA_RELAXED_ORDERING == 2, "flags");
