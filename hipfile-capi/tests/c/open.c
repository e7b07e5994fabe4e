/* open: opens the driver once and prints "<err> <hip_drv_err> <use count>", so a test can
 * check how configuration and the HIP runtime found in the process decide the open. */
#include <hipfile.h>

#include <stdio.h>

int main(void)
{
    hipFileError_t e = hipFileDriverOpen();
    printf("%d %d %lld\n", (int)e.err, (int)e.hip_drv_err, (long long)hipFileUseCount());
    return 0;
}
