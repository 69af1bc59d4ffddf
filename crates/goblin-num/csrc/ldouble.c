/* Long double arithmetic for the commands Redis implements with `long double`
 * (INCRBYFLOAT, HINCRBYFLOAT). Rust has no 80-bit float type, and the results
 * a user sees ("10.5" + "0.1" = "10.6") depend on that extra precision, so
 * these few operations are done in C exactly as Redis does them.
 *
 * A long double crosses the boundary as an opaque, 16-byte aligned buffer. */
#include <errno.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <ctype.h>
#include <float.h>

#define MAX_LONG_DOUBLE_CHARS 5*1024

_Static_assert(sizeof(long double) <= 16, "long double must fit the opaque buffer");

/* Redis's string2ld(): strict, no leading space, no trailing bytes, no NaN. */
int goblin_ld_parse(const char *s, size_t slen, long double *out) {
    char buf[MAX_LONG_DOUBLE_CHARS];
    long double value;
    char *eptr;

    if (slen == 0 || slen >= sizeof(buf)) return 0;
    memcpy(buf, s, slen);
    buf[slen] = '\0';

    errno = 0;
    value = strtold(buf, &eptr);
    if (isspace((unsigned char)buf[0]) || eptr[0] != '\0' ||
        (size_t)(eptr - buf) != slen ||
        (errno == ERANGE &&
            (value == HUGE_VALL || value == -HUGE_VALL || fpclassify(value) == FP_ZERO)) ||
        errno == EINVAL ||
        isnan(value))
        return 0;
    *out = value;
    return 1;
}

void goblin_ld_from_i64(long long v, long double *out) { *out = (long double)v; }

void goblin_ld_from_f64(double v, long double *out) { *out = (long double)v; }

void goblin_ld_add(const long double *a, const long double *b, long double *out) { *out = *a + *b; }

void goblin_ld_sub(const long double *a, const long double *b, long double *out) { *out = *a - *b; }

int goblin_ld_is_finite(const long double *a) { return !(isnan(*a) || isinf(*a)); }

int goblin_ld_is_inf(const long double *a) { return isinf(*a) != 0; }

/* -1, 0 or 1 as a is below, equal to or above b (neither is NaN). */
int goblin_ld_cmp(const long double *a, const long double *b) { return (*a > *b) - (*a < *b); }

/* LDBL_MAX with the sign of `sign` (INCREX's default bounds). */
void goblin_ld_max(int sign, long double *out) { *out = sign < 0 ? -LDBL_MAX : LDBL_MAX; }

double goblin_ld_to_f64(const long double *a) { return (double)*a; }

/* Redis's ld2string(): mode 0 = LD_STR_AUTO ("%.17Lg"), 1 = LD_STR_HUMAN
 * ("%.17Lf" without trailing zeroes). Returns the length, 0 on no room. */
int goblin_ld_format(const long double *value, int mode, char *buf, size_t len) {
    size_t l = 0;
    long double v = *value;
    if (isinf(v)) {
        if (len < 5) return 0;
        if (v > 0) { memcpy(buf, "inf", 3); l = 3; }
        else { memcpy(buf, "-inf", 4); l = 4; }
    } else if (mode == 0) {
        l = snprintf(buf, len, "%.17Lg", v);
        if (l + 1 > len) return 0;
    } else {
        l = snprintf(buf, len, "%.17Lf", v);
        if (l + 1 > len) return 0;
        if (strchr(buf, '.') != NULL) {
            char *p = buf + l - 1;
            while (*p == '0') { p--; l--; }
            if (*p == '.') l--;
        }
        if (l == 2 && buf[0] == '-' && buf[1] == '0') { buf[0] = '0'; l = 1; }
    }
    buf[l] = '\0';
    return (int)l;
}

/* Redis's getTimeoutFromObjectOrReply() for a timeout in seconds:
 * (long long) ceill(v * 1000.0). A value out of the long long range converts
 * to LLONG_MIN, as the x86 conversion Redis relies on does, and is then
 * reported as a negative timeout. */
long long goblin_ld_seconds_to_ms(const long double *v) {
    long double ms = ceill(*v * 1000.0);
    if (isnan(ms) || ms >= 9223372036854775808.0L || ms < -9223372036854775808.0L)
        return (-9223372036854775807LL - 1);
    return (long long)ms;
}
