// glibc's allocator settings (mallopt), for the server; nothing on other C libraries.
#if defined(__linux__) && __has_include(<malloc.h>)
#include <malloc.h>
#define REVSYNC_HAS_MALLOPT 1
#endif
