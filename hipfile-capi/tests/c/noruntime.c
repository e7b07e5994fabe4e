/* noruntime: in a process where no GPU runtime can be loaded, parameters are configuration:
 * they are staged and read back, properties and statistics answer, and only the open fails
 * (hipFilePlatformNotSupported). Prints "ok". */
#include <hipfile.h>

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#define CHECK(cond)                                                                  \
    do {                                                                             \
        if (!(cond)) {                                                               \
            fprintf(stderr, "%s:%d: check failed: %s\n", __FILE__, __LINE__, #cond); \
            exit(1);                                                                 \
        }                                                                            \
    } while (0)
#define ERR(call) ((int)(call).err)

int main(void)
{
    size_t size = 0;
    bool flag = false;
    char text[64];
    CHECK(ERR(hipFileSetParameterSizeT(hipFileParamPropertiesIOBatchsize, 64)) == hipFileSuccess);
    CHECK(ERR(hipFileGetParameterSizeT(hipFileParamPropertiesIOBatchsize, &size)) == hipFileSuccess);
    CHECK(size == 64);
    CHECK(ERR(hipFileSetParameterBool(hipFileParamPropertiesAllowSystemMemory, true)) == hipFileSuccess);
    CHECK(ERR(hipFileGetParameterBool(hipFileParamPropertiesAllowSystemMemory, &flag)) == hipFileSuccess);
    CHECK(flag);
    CHECK(ERR(hipFileSetParameterString(hipFileParamLoggingLevel, "error")) == hipFileSuccess);
    CHECK(ERR(hipFileGetParameterString(hipFileParamLoggingLevel, text, sizeof text)) == hipFileSuccess);
    CHECK(strcmp(text, "ERROR") == 0);
    CHECK(ERR(hipFileSetParameterSizeT(hipFileParamPropertiesIOBatchsize, 0)) == hipFileInvalidValue);

    hipFileDriverProps_t props;
    CHECK(ERR(hipFileDriverGetProperties(&props)) == hipFileSuccess);
    CHECK(props.max_batch_io_count == 64);
    hipFileStatsLevel1_t stats;
    memset(&stats, 0xAB, sizeof stats);
    CHECK(ERR(hipFileGetStatsL1(&stats)) == hipFileSuccess);
    CHECK(stats.read_ops.ok == 0 && stats.read_bytes == 0);

    /* Only the open needs a runtime; the staged values stay staged. */
    CHECK(ERR(hipFileDriverOpen()) == hipFilePlatformNotSupported);
    CHECK(hipFileUseCount() == 0);
    CHECK(ERR(hipFileGetParameterSizeT(hipFileParamPropertiesIOBatchsize, &size)) == hipFileSuccess);
    CHECK(size == 64);
    CHECK(ERR(hipFileDriverClose()) == hipFileDriverNotInitialized);
    printf("ok\n");
    return 0;
}
