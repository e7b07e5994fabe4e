/* noruntime: in a process where no GPU runtime can be loaded, parameters are configuration:
 * they are staged and read back, properties and statistics answer, and only the open fails
 * (hipFilePlatformNotSupported). Prints "ok". */
#include "common.h"

int main(void)
{
    size_t size = 0;
    bool flag = false;
    char text[64];
    EXPECT_OK(hipFileSetParameterSizeT(hipFileParamPropertiesIOBatchsize, 64));
    EXPECT_OK(hipFileGetParameterSizeT(hipFileParamPropertiesIOBatchsize, &size));
    CHECK(size == 64);
    EXPECT_OK(hipFileSetParameterBool(hipFileParamPropertiesAllowSystemMemory, true));
    EXPECT_OK(hipFileGetParameterBool(hipFileParamPropertiesAllowSystemMemory, &flag));
    CHECK(flag);
    EXPECT_OK(hipFileSetParameterString(hipFileParamLoggingLevel, "error"));
    EXPECT_OK(hipFileGetParameterString(hipFileParamLoggingLevel, text, sizeof text));
    CHECK(strcmp(text, "ERROR") == 0);
    EXPECT_ERR(hipFileSetParameterSizeT(hipFileParamPropertiesIOBatchsize, 0), hipFileInvalidValue);

    hipFileDriverProps_t props;
    EXPECT_OK(hipFileDriverGetProperties(&props));
    CHECK(props.max_batch_io_count == 64);
    hipFileStatsLevel1_t stats;
    memset(&stats, 0xAB, sizeof stats);
    EXPECT_OK(hipFileGetStatsL1(&stats));
    CHECK(stats.read_ops.ok == 0 && stats.read_bytes == 0);

    /* Only the open needs a runtime; the staged values stay staged. */
    EXPECT_ERR(hipFileDriverOpen(), hipFilePlatformNotSupported);
    CHECK(hipFileUseCount() == 0);
    EXPECT_OK(hipFileGetParameterSizeT(hipFileParamPropertiesIOBatchsize, &size));
    CHECK(size == 64);
    EXPECT_ERR(hipFileDriverClose(), hipFileDriverNotInitialized);
    printf("ok\n");
    return 0;
}
