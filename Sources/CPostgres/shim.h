// libpq's header: where pkg-config says, or Debian's location without pkg-config.
#if __has_include(<libpq-fe.h>)
#include <libpq-fe.h>
#else
#include <postgresql/libpq-fe.h>
#endif
