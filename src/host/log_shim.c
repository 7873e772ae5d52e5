/* libretro's log callback is C-variadic, which stable Rust cannot define.
 * This shim formats the message and hands a plain string to the Rust host. */
#include <stdarg.h>
#include <stddef.h>
#include <stdio.h>

extern void framelock_host_log_line(int level, const char *msg, size_t len);

void framelock_host_log_printf(int level, const char *fmt, ...)
{
   char buf[2048];
   va_list ap;
   int n;
   size_t len;

   if (!fmt)
      return;
   va_start(ap, fmt);
   n = vsnprintf(buf, sizeof(buf), fmt, ap);
   va_end(ap);
   if (n < 0)
      return;
   len = (size_t)n < sizeof(buf) ? (size_t)n : sizeof(buf) - 1;
   framelock_host_log_line(level, buf, len);
}
