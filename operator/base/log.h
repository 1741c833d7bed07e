/* Logging in klog's layout on stderr (`Lmmdd hh:mm:ss.uuuuuu pid file:line] msg`),
 * or as structured journal fields when stderr is connected to the journal.
 * Library layers log at debug only; callers decide what is worth saying.
 * Control characters in a message are written as C escapes (\n, \x1b): one
 * call, one line. */
#pragma once

#include "macro.h"

typedef enum LogLevel {
        LOG_LEVEL_ERROR = 0,
        LOG_LEVEL_WARNING,
        LOG_LEVEL_INFO,
        LOG_LEVEL_DEBUG,
} LogLevel;

/* klog-style verbosity: -v=0 shows info and above, -v>=4 shows debug. */
void log_set_verbosity(int v);
int log_get_verbosity(void);
/* Controllers set this around their sync so journal entries carry CONTROLLER=. */
void log_set_controller(const char *name);
/* Re-evaluate $JOURNAL_STREAM (tests call it after changing the environment). */
void log_open(void);

int log_internal(LogLevel level, int error, const char *file, int line, const char *fmt, ...) _printf_(5, 6);

#define log_full_errno(level, error, ...)                                    \
        ({                                                                   \
                int _e_ = (error);                                           \
                _e_ = _e_ < 0 ? -_e_ : _e_;                                  \
                log_internal((level), _e_, __FILE__, __LINE__, __VA_ARGS__); \
                -_e_;                                                        \
        })

#define log_debug(...)   (void) log_internal(LOG_LEVEL_DEBUG, 0, __FILE__, __LINE__, __VA_ARGS__)
#define log_info(...)    (void) log_internal(LOG_LEVEL_INFO, 0, __FILE__, __LINE__, __VA_ARGS__)
#define log_warning(...) (void) log_internal(LOG_LEVEL_WARNING, 0, __FILE__, __LINE__, __VA_ARGS__)
#define log_error(...)   (void) log_internal(LOG_LEVEL_ERROR, 0, __FILE__, __LINE__, __VA_ARGS__)

/* These return the negative errno so callers can `return log_error_errno(r, ...)`. */
#define log_debug_errno(e, ...)   log_full_errno(LOG_LEVEL_DEBUG, e, __VA_ARGS__)
#define log_info_errno(e, ...)    log_full_errno(LOG_LEVEL_INFO, e, __VA_ARGS__)
#define log_warning_errno(e, ...) log_full_errno(LOG_LEVEL_WARNING, e, __VA_ARGS__)
#define log_error_errno(e, ...)   log_full_errno(LOG_LEVEL_ERROR, e, __VA_ARGS__)

bool log_level_enabled(LogLevel level);
