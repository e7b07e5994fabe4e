/* params: parameters and driver properties as upstream's system tests (test/system/config.cpp,
 * driver.cpp) describe them for cuFile: defaults, a set while closed staged and read back, the
 * next open applying it, the close restoring the default, a set while open refused; every
 * unknown parameter and null pointer; a string buffer too short; a log directory that does not
 * exist not applied; the driver setters; properties read with the driver closed (which does not
 * open it) and open. */
#include <hipfile.h>

#include <stdbool.h>

#include "common.h"

static void closed(void)
{
    while (hipFileUseCount() > 0) {
        EXPECT_OK(hipFileDriverClose());
    }
}

static void size_parameter(void)
{
    size_t v = 77;
    EXPECT_OK(hipFileGetParameterSizeT(hipFileParamExecutionMaxIOThreads, &v));
    CHECK(v == 0); /* automatic */
    EXPECT_OK(hipFileSetParameterSizeT(hipFileParamExecutionMaxIOThreads, 10));
    EXPECT_OK(hipFileGetParameterSizeT(hipFileParamExecutionMaxIOThreads, &v));
    CHECK(v == 10); /* staged */
    EXPECT_OK(hipFileDriverOpen());
    EXPECT_OK(hipFileGetParameterSizeT(hipFileParamExecutionMaxIOThreads, &v));
    CHECK(v == 10); /* applied */
    EXPECT_ERR(hipFileSetParameterSizeT(hipFileParamExecutionMaxIOThreads, 4), hipFileDriverAlreadyOpen);
    EXPECT_OK(hipFileDriverOpen()); /* a second open keeps what the first applied */
    EXPECT_OK(hipFileGetParameterSizeT(hipFileParamExecutionMaxIOThreads, &v));
    CHECK(v == 10);
    closed();
    EXPECT_OK(hipFileGetParameterSizeT(hipFileParamExecutionMaxIOThreads, &v));
    CHECK(v == 0); /* the default again */

    /* Ranges: the bounce chunk is a multiple of 4 KiB from 64 KiB to 256 MiB. */
    EXPECT_ERR(hipFileSetParameterSizeT(hipFileParamPropertiesMaxDirectIOSizeKB, 63), hipFileInvalidValue);
    EXPECT_ERR(hipFileSetParameterSizeT(hipFileParamPropertiesMaxDirectIOSizeKB, 66), hipFileInvalidValue);
    EXPECT_ERR(hipFileSetParameterSizeT(hipFileParamPropertiesIOBatchsize, 0), hipFileInvalidValue);
    EXPECT_ERR(hipFileSetParameterSizeT(hipFileParamProfileStats, 4), hipFileInvalidValue);
    EXPECT_OK(hipFileGetParameterSizeT(hipFileParamPropertiesMaxDirectIOSizeKB, &v));
    CHECK(v == 4096); /* refused values changed nothing */

    /* The batch size steers hipFileBatchIOSetUp. */
    hipFileBatchHandle_t batch;
    EXPECT_ERR(hipFileBatchIOSetUp(&batch, 200), hipFileInvalidValue);
    EXPECT_OK(hipFileSetParameterSizeT(hipFileParamPropertiesIOBatchsize, 256));
    EXPECT_OK(hipFileBatchIOSetUp(&batch, 200));
    hipFileBatchIODestroy(batch);
    EXPECT_OK(hipFileDriverOpen());
    EXPECT_OK(hipFileBatchIOSetUp(&batch, 256));
    hipFileBatchIODestroy(batch);
    closed();
    EXPECT_ERR(hipFileBatchIOSetUp(&batch, 200), hipFileInvalidValue);
}

static void bool_parameter(void)
{
    bool v = true;
    EXPECT_OK(hipFileGetParameterBool(hipFileParamUsePcip2pdma, &v));
    CHECK(!v);
    EXPECT_OK(hipFileSetParameterBool(hipFileParamUsePcip2pdma, true));
    EXPECT_OK(hipFileGetParameterBool(hipFileParamUsePcip2pdma, &v));
    CHECK(v);
    EXPECT_OK(hipFileDriverOpen());
    EXPECT_OK(hipFileGetParameterBool(hipFileParamUsePcip2pdma, &v));
    CHECK(v);
    EXPECT_ERR(hipFileSetParameterBool(hipFileParamUsePcip2pdma, false), hipFileDriverAlreadyOpen);
    closed();
    EXPECT_OK(hipFileGetParameterBool(hipFileParamUsePcip2pdma, &v));
    CHECK(!v);
    EXPECT_OK(hipFileGetParameterBool(hipFileParamPropertiesAllowCompatMode, &v));
    CHECK(v);
}

static void string_parameter(void)
{
    char buf[64];
    memset(buf, 'x', sizeof buf);
    EXPECT_OK(hipFileGetParameterString(hipFileParamLogDir, buf, (int)sizeof buf));
    CHECK(strcmp(buf, "") == 0);
    EXPECT_OK(hipFileSetParameterString(hipFileParamLogDir, "/tmp"));
    EXPECT_OK(hipFileGetParameterString(hipFileParamLogDir, buf, (int)sizeof buf));
    CHECK(strcmp(buf, "/tmp") == 0);
    /* Too short for "/tmp" and its NUL: refused, nothing written. */
    memset(buf, 'x', sizeof buf);
    EXPECT_ERR(hipFileGetParameterString(hipFileParamLogDir, buf, 4), hipFileInvalidValue);
    CHECK(buf[0] == 'x' && buf[4] == 'x');
    EXPECT_OK(hipFileGetParameterString(hipFileParamLogDir, buf, 5));
    CHECK(strcmp(buf, "/tmp") == 0);
    EXPECT_OK(hipFileDriverOpen());
    EXPECT_OK(hipFileGetParameterString(hipFileParamLogDir, buf, (int)sizeof buf));
    CHECK(strcmp(buf, "/tmp") == 0);
    EXPECT_ERR(hipFileSetParameterString(hipFileParamLogDir, "/foo/bar"), hipFileDriverAlreadyOpen);
    closed();
    EXPECT_OK(hipFileGetParameterString(hipFileParamLogDir, buf, (int)sizeof buf));
    CHECK(strcmp(buf, "") == 0);

    /* A directory that does not exist is staged, and not applied at open. */
    EXPECT_OK(hipFileSetParameterString(hipFileParamLogDir, "/no/such/directory"));
    EXPECT_OK(hipFileDriverOpen());
    EXPECT_OK(hipFileGetParameterString(hipFileParamLogDir, buf, (int)sizeof buf));
    CHECK(strcmp(buf, "") == 0);
    closed();

    EXPECT_OK(hipFileGetParameterString(hipFileParamLoggingLevel, buf, (int)sizeof buf));
    CHECK(strcmp(buf, "ERROR") == 0);
    EXPECT_OK(hipFileSetParameterString(hipFileParamLoggingLevel, "debug"));
    EXPECT_OK(hipFileGetParameterString(hipFileParamLoggingLevel, buf, (int)sizeof buf));
    CHECK(strcmp(buf, "DEBUG") == 0);
    EXPECT_ERR(hipFileSetParameterString(hipFileParamLoggingLevel, "LOUD"), hipFileInvalidValue);
    EXPECT_ERR(hipFileSetParameterString(hipFileParamLogDir, "relative/dir"), hipFileInvalidValue);
    EXPECT_OK(hipFileDriverOpen()); /* applies, then the close clears */
    closed();

    /* Ours: the page-cache policy, and ForceOdirectMode as its bypass. */
    bool direct = true;
    EXPECT_OK(hipFileGetParameterString(hipFileParamPageCache, buf, (int)sizeof buf));
    CHECK(strcmp(buf, "auto") == 0);
    EXPECT_OK(hipFileGetParameterBool(hipFileParamForceOdirectMode, &direct));
    CHECK(!direct);
    EXPECT_OK(hipFileSetParameterString(hipFileParamPageCache, "Keep"));
    EXPECT_ERR(hipFileSetParameterString(hipFileParamPageCache, "direct"), hipFileInvalidValue);
    EXPECT_OK(hipFileDriverOpen());
    EXPECT_OK(hipFileGetParameterString(hipFileParamPageCache, buf, (int)sizeof buf));
    CHECK(strcmp(buf, "keep") == 0);
    closed();
    EXPECT_OK(hipFileSetParameterBool(hipFileParamForceOdirectMode, true));
    EXPECT_OK(hipFileGetParameterString(hipFileParamPageCache, buf, (int)sizeof buf));
    CHECK(strcmp(buf, "bypass") == 0);
    EXPECT_OK(hipFileDriverOpen());
    EXPECT_OK(hipFileGetParameterBool(hipFileParamForceOdirectMode, &direct));
    CHECK(direct);
    closed();
}

static void invalid_arguments(void)
{
    size_t s;
    bool b;
    char buf[8];
    EXPECT_ERR(hipFileGetParameterSizeT((hipFileSizeTConfigParameter_t)-1, &s), hipFileInvalidValue);
    EXPECT_ERR(hipFileGetParameterSizeT((hipFileSizeTConfigParameter_t)12, &s), hipFileInvalidValue);
    EXPECT_ERR(hipFileGetParameterSizeT(hipFileParamProfileStats, NULL), hipFileInvalidValue);
    EXPECT_ERR(hipFileSetParameterSizeT((hipFileSizeTConfigParameter_t)12, 1), hipFileInvalidValue);
    EXPECT_ERR(hipFileGetParameterBool((hipFileBoolConfigParameter_t)12, &b), hipFileInvalidValue);
    EXPECT_ERR(hipFileGetParameterBool(hipFileParamProfileNvtx, NULL), hipFileInvalidValue);
    EXPECT_ERR(hipFileSetParameterBool((hipFileBoolConfigParameter_t)-5, true), hipFileInvalidValue);
    EXPECT_ERR(hipFileGetParameterString((hipFileStringConfigParameter_t)3, buf, 8), hipFileInvalidValue);
    EXPECT_ERR(hipFileGetParameterString(hipFileParamLogDir, NULL, 8), hipFileInvalidValue);
    EXPECT_ERR(hipFileGetParameterString(hipFileParamLogDir, buf, -1), hipFileInvalidValue);
    EXPECT_ERR(hipFileGetParameterString(hipFileParamLogDir, buf, 0), hipFileInvalidValue);
    EXPECT_ERR(hipFileSetParameterString((hipFileStringConfigParameter_t)3, "/tmp"), hipFileInvalidValue);
    EXPECT_ERR(hipFileSetParameterString(hipFileParamLogDir, NULL), hipFileInvalidValue);
    EXPECT_ERR(hipFileDriverGetProperties(NULL), hipFileInvalidValue);
}

static void properties(void)
{
    hipFileDriverProps_t props;
    memset(&props, 0xff, sizeof props);
    EXPECT_OK(hipFileDriverGetProperties(&props));
    CHECK(hipFileUseCount() == 0); /* does not open the driver */
    CHECK(props.nvfs.max_direct_io_size == 4096);
    CHECK(props.max_device_pinned_mem_size == 256 * 1024);
    CHECK(props.max_batch_io_count == 128);
    CHECK(props.feature_flags & (1u << hipFileBatchIOSupported));
    CHECK(props.feature_flags & (1u << hipFileStreamsSupported));
    CHECK(props.nvfs.driver_control_flags & (1u << hipFileAllowCompatMode));
    CHECK(!(props.nvfs.driver_control_flags & (1u << hipFileUsePollMode)));

    /* The driver setters stage values, as upstream's NVIDIA tests expect. */
    EXPECT_OK(hipFileDriverSetPollMode(true, 4096));
    EXPECT_OK(hipFileDriverSetMaxDirectIOSize(16 * 1024));
    EXPECT_OK(hipFileDriverSetMaxCacheSize(16 * 1024));
    EXPECT_OK(hipFileDriverSetMaxPinnedMemSize(32 * 1024));
    EXPECT_ERR(hipFileDriverSetMaxDirectIOSize(1), hipFileInvalidValue);
    EXPECT_ERR(hipFileDriverSetMaxPinnedMemSize(512), hipFileInvalidValue);
    CHECK(hipFileUseCount() == 0);
    EXPECT_OK(hipFileDriverGetProperties(&props));
    CHECK(props.nvfs.max_direct_io_size == 16 * 1024 && props.nvfs.poll_thresh_size == 4096);
    CHECK(props.max_device_cache_size == 16 * 1024 && props.max_device_pinned_mem_size == 32 * 1024);
    CHECK(props.nvfs.driver_control_flags & (1u << hipFileUsePollMode));

    EXPECT_OK(hipFileDriverOpen());
    memset(&props, 0, sizeof props);
    EXPECT_OK(hipFileDriverGetProperties(&props));
    CHECK(props.nvfs.max_direct_io_size == 16 * 1024 && props.max_device_pinned_mem_size == 32 * 1024);
    EXPECT_ERR(hipFileDriverSetMaxDirectIOSize(8 * 1024), hipFileDriverAlreadyOpen);
    EXPECT_ERR(hipFileDriverSetPollMode(false, 4), hipFileDriverAlreadyOpen);
    closed();
    EXPECT_OK(hipFileDriverGetProperties(&props));
    CHECK(props.nvfs.max_direct_io_size == 4096 && props.max_device_cache_size == 131072);
}

int main(void)
{
    gpu_init();
    CHECK(hipFileUseCount() == 0);
    size_parameter();
    bool_parameter();
    string_parameter();
    invalid_arguments();
    properties();
    printf("ok\n");
    return 0;
}
