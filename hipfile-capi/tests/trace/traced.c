/* A program whose hipFile calls a profiler traces (tests/trace.rs): prints what the stand-in
 * rocprofiler-register saw, and how many hipFileGetVersion calls its wrapper counted. */
#include <stdio.h>

#include <hipfile.h>

int fake_register_calls(void);
const char *fake_register_seen(void);

int main(void) {
    unsigned major = 9, minor = 9, patch = 9;
    hipFileError_t e = hipFileGetVersion(&major, &minor, &patch);
    hipFileGetVersion(NULL, NULL, NULL);
    printf("%s\nversion %u.%u.%u err %d\nwrapped calls %d\n", fake_register_seen(), major, minor, patch, (int)e.err,
           fake_register_calls());
    return 0;
}
