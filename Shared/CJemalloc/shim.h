#ifndef CJEMALLOC_SHIM_H
#define CJEMALLOC_SHIM_H
#include <stddef.h>
// Only jemalloc's control call: malloc and free themselves are jemalloc's once the library is linked
// (Debian builds it without a prefix, so its malloc replaces glibc's for the whole process).
// <jemalloc/jemalloc.h> is not included: it redeclares malloc and friends beside <stdlib.h>.
int mallctl(const char *name, void *oldp, size_t *oldlenp, void *newp, size_t newlen);
#endif
