/* The metrics registry: definitions by name, each with its samples keyed by
 * the already-escaped label set (`{a="x",b="y"}`, or "" without labels), so
 * lookup, deduplication and the stable sort order all use that one string. */
#include <math.h>
#include <stdarg.h>

#include "base/hashmap.h"
#include "metrics.h"

struct Metric {
        MetricType type;
        char *name;
        char *help;
        char **label_names;
        size_t n_labels;
        Hashmap *samples; /* escaped label set -> double* */
};

typedef struct Collector {
        MetricsCollectFunc fn;
        void *userdata;
} Collector;

struct MetricsRegistry {
        Hashmap *metrics; /* name -> Metric* */
        Collector *collectors;
        size_t n_collectors;
};

static const char *const metric_type_names[_METRIC_TYPE_MAX] = {
        [METRIC_COUNTER] = "counter",
        [METRIC_GAUGE] = "gauge",
};

static void metric_free(void *p)
{
        Metric *m = p;

        if (!m)
                return;
        for (size_t i = 0; i < m->n_labels; i++)
                free(m->label_names[i]);
        free(m->label_names);
        hashmap_free(m->samples);
        free(m->name);
        free(m->help);
        free(m);
}

static void metric_freep(Metric **m)
{
        metric_free(*m);
}

MetricsRegistry *metrics_registry_new(void)
{
        _cleanup_free_ MetricsRegistry *reg = calloc(1, sizeof *reg);
        if (!reg)
                return NULL;
        reg->metrics = hashmap_new(metric_free);
        if (!reg->metrics)
                return NULL;
        return TAKE_PTR(reg);
}

MetricsRegistry *metrics_registry_free(MetricsRegistry *reg)
{
        if (!reg)
                return NULL;
        hashmap_free(reg->metrics);
        free(reg->collectors);
        return mfree(reg);
}

static bool name_char_ok(char c, bool first, bool colon)
{
        if ((c >= 'a' && c <= 'z') || (c >= 'A' && c <= 'Z') || c == '_')
                return true;
        if (colon && c == ':')
                return true;
        return !first && c >= '0' && c <= '9';
}

bool metrics_name_is_valid(const char *name)
{
        if (!name || !*name)
                return false;
        for (const char *p = name; *p; p++)
                if (!name_char_ok(*p, p == name, true))
                        return false;
        return true;
}

/* Label names starting with "__" are reserved for Prometheus itself. */
static bool label_name_is_valid(const char *name)
{
        if (!*name || startswith(name, "__"))
                return false;
        for (const char *p = name; *p; p++)
                if (!name_char_ok(*p, p == name, false))
                        return false;
        return true;
}

static bool metric_same_definition(const Metric *m, MetricType type, const char *help,
                                   const char *const *labels, size_t n)
{
        if (m->type != type || !streq(m->help, help) || m->n_labels != n)
                return false;
        for (size_t i = 0; i < n; i++)
                if (!streq(m->label_names[i], labels[i]))
                        return false;
        return true;
}

static int sample_put(Metric *m, const char *key)
{
        _cleanup_free_ double *v = calloc(1, sizeof *v);
        if (!v)
                return -ENOMEM;
        int r = hashmap_put(m->samples, key, v);
        if (r < 0)
                return r;
        TAKE_PTR(v);
        return 0;
}

static int metric_new(MetricType type, const char *name, const char *help, const char *const *labels,
                      size_t n, Metric **ret)
{
        _cleanup_(metric_freep) Metric *m = calloc(1, sizeof *m);
        if (!m)
                return -ENOMEM;
        m->type = type;
        m->name = strdup(name);
        m->help = strdup(help);
        m->label_names = calloc(MAX(n, (size_t) 1), sizeof(char *));
        m->samples = hashmap_new(free);
        if (!m->name || !m->help || !m->label_names || !m->samples)
                return -ENOMEM;
        for (; m->n_labels < n; m->n_labels++) {
                m->label_names[m->n_labels] = strdup(labels[m->n_labels]);
                if (!m->label_names[m->n_labels])
                        return -ENOMEM;
        }
        /* Like client_golang: a plain metric exists (as 0) from the start, a
         * labelled one only once a label set has been written. */
        if (n == 0) {
                int r = sample_put(m, "");
                if (r < 0)
                        return r;
        }
        *ret = TAKE_PTR(m);
        return 0;
}

static int metrics_register_va(MetricsRegistry *reg, MetricType type, Metric **ret, const char *name,
                               const char *help, va_list ap)
{
        const char *labels[METRICS_LABELS_MAX];
        size_t n = 0;
        Metric *m = NULL;
        int r;

        assert_return(reg && ret && help, -EINVAL);
        assert_return(metrics_name_is_valid(name), -EINVAL);

        for (const char *l; (l = va_arg(ap, const char *));) {
                if (n >= METRICS_LABELS_MAX)
                        return -E2BIG;
                if (!label_name_is_valid(l))
                        return -EINVAL;
                for (size_t i = 0; i < n; i++)
                        if (streq(labels[i], l))
                                return -EINVAL;
                labels[n++] = l;
        }

        m = hashmap_get(reg->metrics, name);
        if (m) {
                if (!metric_same_definition(m, type, help, labels, n))
                        return -EEXIST;
                *ret = m;
                return 0;
        }
        r = metric_new(type, name, help, labels, n, &m);
        if (r < 0)
                return r;
        r = hashmap_put(reg->metrics, name, m);
        if (r < 0) {
                metric_free(m);
                return r;
        }
        *ret = m;
        return 0;
}

int metrics_counter(MetricsRegistry *reg, Metric **ret, const char *name, const char *help, ...)
{
        va_list ap;
        va_start(ap, help);
        int r = metrics_register_va(reg, METRIC_COUNTER, ret, name, help, ap);
        va_end(ap);
        return r;
}

int metrics_gauge(MetricsRegistry *reg, Metric **ret, const char *name, const char *help, ...)
{
        va_list ap;
        va_start(ap, help);
        int r = metrics_register_va(reg, METRIC_GAUGE, ret, name, help, ap);
        va_end(ap);
        return r;
}

/* Text format escaping: HELP escapes backslash and newline, label values
 * also the double quote. */
static int append_escaped(Buf *out, const char *s, bool quote)
{
        int r = 0;

        for (const char *p = s; *p && r >= 0; p++)
                switch (*p) {
                case '\\':
                        r = buf_append(out, "\\\\", 2);
                        break;
                case '\n':
                        r = buf_append(out, "\\n", 2);
                        break;
                case '"':
                        r = quote ? buf_append(out, "\\\"", 2) : buf_append(out, p, 1);
                        break;
                default:
                        r = buf_append(out, p, 1);
                }
        return r;
}

/* Appends NUL-terminated strings until a NULL. */
static int append_strings(Buf *out, ...) __attribute__((sentinel));
static int append_strings(Buf *out, ...)
{
        va_list ap;
        int r = 0;

        va_start(ap, out);
        for (const char *s; r >= 0 && (s = va_arg(ap, const char *));)
                r = buf_append(out, s, strlen(s));
        va_end(ap);
        return r;
}

/* Reads exactly one value per label name plus the NULL sentinel and finds
 * (or creates) the sample for that label set. */
static int sample_lookup(Metric *m, va_list ap, double **ret)
{
        _cleanup_(buf_free) Buf key = BUF_INIT(0);
        int r;

        for (size_t i = 0; i < m->n_labels; i++) {
                const char *v = va_arg(ap, const char *);
                if (!v)
                        return -EINVAL;
                r = append_strings(&key, i == 0 ? "{" : ",", m->label_names[i], "=\"", NULL);
                if (r >= 0)
                        r = append_escaped(&key, v, true);
                if (r >= 0)
                        r = append_strings(&key, "\"", NULL);
                if (r < 0)
                        return r;
        }
        if (va_arg(ap, const char *))
                return -EINVAL;
        if (m->n_labels > 0) {
                r = append_strings(&key, "}", NULL);
                if (r < 0)
                        return r;
        }

        const char *k = key.data ? key.data : "";
        double *v = hashmap_get(m->samples, k);
        if (!v) {
                if (hashmap_size(m->samples) >= METRICS_SAMPLES_MAX)
                        return -E2BIG;
                r = sample_put(m, k);
                if (r < 0)
                        return r;
                v = hashmap_get(m->samples, k);
        }
        *ret = v;
        return 0;
}

int metrics_set(Metric *m, double value, ...)
{
        double *v = NULL;
        va_list ap;

        assert_return(m, -EINVAL);
        /* Written this way round so NaN is refused too. */
        assert_return(m->type != METRIC_COUNTER || value >= 0, -EINVAL);
        va_start(ap, value);
        int r = sample_lookup(m, ap, &v);
        va_end(ap);
        if (r < 0)
                return r;
        *v = value;
        return 0;
}

int metrics_add(Metric *m, double delta, ...)
{
        double *v = NULL;
        va_list ap;

        assert_return(m, -EINVAL);
        assert_return(m->type != METRIC_COUNTER || delta >= 0, -EINVAL);
        va_start(ap, delta);
        int r = sample_lookup(m, ap, &v);
        va_end(ap);
        if (r < 0)
                return r;
        *v += delta;
        return 0;
}

void metrics_reset(Metric *m)
{
        HashmapIter it;
        const char *k;
        double *v;

        if (!m)
                return;
        HASHMAP_FOREACH (k, v, m->samples, it) {
                if (m->n_labels == 0)
                        *v = 0;
                else
                        (void) hashmap_remove(m->samples, k);
        }
}

int metrics_register_collector(MetricsRegistry *reg, MetricsCollectFunc fn, void *userdata)
{
        assert_return(reg && fn, -EINVAL);
        Collector *c = reallocarray(reg->collectors, reg->n_collectors + 1, sizeof *c);
        if (!c)
                return -ENOMEM;
        reg->collectors = c;
        c[reg->n_collectors++] = (Collector){.fn = fn, .userdata = userdata};
        return 0;
}

/* Integers print exactly (no exponent below 1e15), everything else as the
 * shortest %g that reads back as the same double: stable across scrapes. */
static void format_value(double v, char buf[static 32])
{
        if (isnan(v))
                strcpy(buf, "NaN");
        else if (isinf(v))
                strcpy(buf, v > 0 ? "+Inf" : "-Inf");
        else if (v == 0)
                strcpy(buf, "0"); /* also -0 */
        else if (v == trunc(v) && fabs(v) < 1e15)
                (void) snprintf(buf, 32, "%.0f", v);
        else
                for (int prec = 15; prec <= 17; prec++) {
                        (void) snprintf(buf, 32, "%.*g", prec, v);
                        if (strtod(buf, NULL) == v)
                                break;
                }
}

static int cmp_metric(const void *a, const void *b)
{
        return strcmp((*(Metric *const *) a)->name, (*(Metric *const *) b)->name);
}

static int cmp_string(const void *a, const void *b)
{
        return strcmp(*(const char *const *) a, *(const char *const *) b);
}

static int metric_render(Metric *m, Buf *out)
{
        size_t n = hashmap_size(m->samples), i = 0;
        HashmapIter it;
        const char *k;
        double *v;
        int r;

        if (n == 0)
                return 0;
        _cleanup_free_ const char **keys = calloc(n, sizeof *keys);
        if (!keys)
                return -ENOMEM;
        HASHMAP_FOREACH (k, v, m->samples, it) {
                keys[i++] = k;
        }
        qsort(keys, n, sizeof *keys, cmp_string);

        r = append_strings(out, "# HELP ", m->name, " ", NULL);
        if (r >= 0)
                r = append_escaped(out, m->help, false);
        if (r >= 0)
                r = append_strings(out, "\n# TYPE ", m->name, " ", metric_type_names[m->type], "\n", NULL);
        for (i = 0; i < n && r >= 0; i++) {
                char value[32];
                format_value(*(double *) hashmap_get(m->samples, keys[i]), value);
                r = append_strings(out, m->name, keys[i], " ", value, "\n", NULL);
        }
        return r;
}

int metrics_render(MetricsRegistry *reg, Buf *out)
{
        HashmapIter it;
        const char *name;
        Metric *m;
        size_t i = 0;
        int r;

        assert_return(reg && out, -EINVAL);

        for (size_t c = 0; c < reg->n_collectors; c++) {
                r = reg->collectors[c].fn(reg, reg->collectors[c].userdata);
                if (r < 0)
                        return r;
        }

        size_t n = hashmap_size(reg->metrics);
        _cleanup_free_ Metric **all = calloc(MAX(n, (size_t) 1), sizeof *all);
        if (!all)
                return -ENOMEM;
        HASHMAP_FOREACH (name, m, reg->metrics, it) {
                all[i++] = m;
        }
        qsort(all, n, sizeof *all, cmp_metric);

        for (i = 0; i < n; i++) {
                r = metric_render(all[i], out);
                if (r < 0)
                        return r;
        }
        return 0;
}
