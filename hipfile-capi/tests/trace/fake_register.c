/* A stand-in for rocprofiler-register (librocprofiler-register.so.0) acting as a profiler
 * would: it keeps what libhipfile.so.0 registers and wraps one entry of the table, counting the
 * calls that reach it. */
#include <stdint.h>
#include <stdio.h>

#include <hipfile-api-trace.h>

static PfnHipFileGetVersion original;
static int calls;
static char seen[256];

static hipFileError_t wrapped(unsigned *major, unsigned *minor, unsigned *patch) {
    calls++;
    return original(major, minor, patch);
}

int rocprofiler_register_library_api_table(const char *name, uint32_t (*import)(void), uint32_t version,
                                           void **tables, uint64_t count, uint64_t *id) {
    struct hipFileDispatchTable *table = tables[0];
    snprintf(seen, sizeof seen, "%s version %u import %u tables %llu size %zu", name, version, import(),
             (unsigned long long)count, table->size);
    original = table->pfn_hipfile_get_version;
    table->pfn_hipfile_get_version = wrapped;
    *id = 1;
    return 0;
}

int fake_register_calls(void) { return calls; }
const char *fake_register_seen(void) { return seen; }
