/* sd-event + libcurl multi glue. Sockets curl wants watched become sd-event
 * I/O sources; curl's single timer becomes one sd-event time source. A
 * zero-delay timer from curl is armed as "now" instead of calling back into
 * curl from inside its own callback. The requests themselves are http.c's. */
#include "base/log.h"
#include "loop-internal.h"

static int check_multi_info(Loop *l);

static int on_timer(sd_event_source *s, uint64_t usec, void *userdata)
{
        Loop *l = userdata;
        int running = 0;

        (void) s;
        (void) usec;
        (void) curl_multi_socket_action(l->multi, CURL_SOCKET_TIMEOUT, 0, &running);
        return check_multi_info(l);
}

static int curl_timer_cb(CURLM *multi, long timeout_ms, void *userdata)
{
        Loop *l = userdata;
        int r;

        (void) multi;
        if (timeout_ms < 0)
                return l->timer ? sd_event_source_set_enabled(l->timer, SD_EVENT_OFF) : 0;
        usec_t when = now_usec(CLOCK_MONOTONIC) + (usec_t) timeout_ms * USEC_PER_MSEC;
        if (!l->timer) {
                /* Accuracy 1 us: 0 means sd-event's default of 250 ms, which
                 * would delay every transfer's start by up to that much. */
                r = sd_event_add_time(l->event, &l->timer, CLOCK_MONOTONIC, when, 1, on_timer, l);
                if (r < 0)
                        return -1;
                (void) sd_event_source_set_description(l->timer, "curl-timer");
                return 0;
        }
        r = sd_event_source_set_time(l->timer, when);
        if (r >= 0)
                r = sd_event_source_set_enabled(l->timer, SD_EVENT_ONESHOT);
        return r < 0 ? -1 : 0;
}

static int on_io(sd_event_source *s, int fd, uint32_t revents, void *userdata)
{
        Loop *l = userdata;
        int running = 0, mask = 0;

        (void) s;
        if (revents & (EPOLLIN | EPOLLHUP))
                mask |= CURL_CSELECT_IN;
        if (revents & EPOLLOUT)
                mask |= CURL_CSELECT_OUT;
        if (revents & EPOLLERR)
                mask |= CURL_CSELECT_ERR;
        (void) curl_multi_socket_action(l->multi, fd, mask, &running);
        return check_multi_info(l);
}

static int curl_socket_cb(CURL *easy, curl_socket_t fd, int what, void *userdata, void *socketp)
{
        Loop *l = userdata;
        sd_event_source *s = socketp;
        uint32_t events = 0;
        int r;

        (void) easy;
        if (what == CURL_POLL_REMOVE) {
                if (s) {
                        (void) sd_event_source_disable_unref(s);
                        (void) curl_multi_assign(l->multi, fd, NULL);
                }
                return 0;
        }
        if (what & CURL_POLL_IN)
                events |= EPOLLIN;
        if (what & CURL_POLL_OUT)
                events |= EPOLLOUT;
        if (s) {
                r = sd_event_source_set_io_events(s, events);
                if (r >= 0)
                        r = sd_event_source_set_enabled(s, SD_EVENT_ON);
                return r < 0 ? -1 : 0;
        }
        r = sd_event_add_io(l->event, &s, fd, events, on_io, l);
        if (r < 0)
                return -1;
        (void) sd_event_source_set_description(s, "curl-io");
        (void) curl_multi_assign(l->multi, fd, s);
        return 0;
}

Loop *loop_new(void)
{
        _cleanup_free_ Loop *l = calloc(1, sizeof *l);
        if (!l)
                return NULL;
        l->n_ref = 1;
        if (sd_event_new(&l->event) < 0)
                return NULL;
        l->multi = curl_multi_init();
        if (!l->multi) {
                sd_event_unref(l->event);
                return NULL;
        }
        (void) curl_multi_setopt(l->multi, CURLMOPT_SOCKETFUNCTION, curl_socket_cb);
        (void) curl_multi_setopt(l->multi, CURLMOPT_SOCKETDATA, l);
        (void) curl_multi_setopt(l->multi, CURLMOPT_TIMERFUNCTION, curl_timer_cb);
        (void) curl_multi_setopt(l->multi, CURLMOPT_TIMERDATA, l);
        loop_update_max_connections(l);
        return TAKE_PTR(l);
}

Loop *loop_ref(Loop *l)
{
        if (l)
                l->n_ref++;
        return l;
}

Loop *loop_unref(Loop *l)
{
        if (!l || --l->n_ref > 0)
                return NULL;
        if (l->resolve_free)
                l->resolve_free(l->resolve_userdata);
        (void) curl_multi_cleanup(l->multi);
        l->timer = sd_event_source_disable_unref(l->timer);
        sd_event_unref(l->event);
        return mfree(l);
}

int loop_set_resolver(Loop *l, LoopResolveFunc resolve, LoopFreeFunc free_userdata, void *userdata)
{
        assert_return(l && resolve, -EINVAL);
        assert_return(l->in_flight == 0, -EBUSY);
        if (l->resolve_free)
                l->resolve_free(l->resolve_userdata);
        l->resolve = resolve;
        l->resolve_free = free_userdata;
        l->resolve_userdata = userdata;
        return 0;
}

sd_event *loop_get_event(Loop *l)
{
        return l->event;
}

int loop_run(Loop *l)
{
        assert_return(l, -EINVAL);
        return sd_event_loop(l->event);
}

int loop_exit(Loop *l, int code)
{
        assert_return(l, -EINVAL);
        return sd_event_exit(l->event, code);
}

unsigned loop_http_in_flight(Loop *l)
{
        return l->in_flight;
}

uint64_t loop_http_connections(Loop *l)
{
        return l->connections;
}

static int on_deadline(sd_event_source *s, uint64_t usec, void *userdata)
{
        bool *expired = userdata;
        (void) s;
        (void) usec;
        *expired = true;
        return 0;
}

int loop_run_until(Loop *l, const bool *done, usec_t timeout)
{
        _cleanup_(sd_event_source_unrefp) sd_event_source *deadline = NULL;
        bool expired = false;
        int r;

        assert_return(l && done, -EINVAL);
        if (timeout != USEC_INFINITY) {
                r = sd_event_add_time_relative(l->event, &deadline, CLOCK_MONOTONIC, timeout, 0, on_deadline,
                                               &expired);
                if (r < 0)
                        return r;
        }
        while (!*done) {
                if (expired)
                        return -ETIMEDOUT;
                r = sd_event_run(l->event, UINT64_MAX);
                if (r < 0)
                        return r;
                if (sd_event_get_state(l->event) == SD_EVENT_FINISHED)
                        return -ECANCELED;
        }
        return 0;
}

/* curl counts busy connections in its cache too, so the cap is every
 * long-lived stream's own connection plus LOOP_IDLE_CONNECTIONS kept for
 * requests. Without a cap curl keeps up to four per handle ever added: with
 * HTTP/1.1 watches that was 16 idle TLS connections (~40 KiB each) at rest.
 * A cap on the total alone (8) closed a connection after nearly every
 * request and doubled the CPU spent at rest. */
void loop_update_max_connections(Loop *l)
{
        (void) curl_multi_setopt(l->multi, CURLMOPT_MAXCONNECTS,
                                 (long) (l->long_lived + LOOP_IDLE_CONNECTIONS));
}

static int check_multi_info(Loop *l)
{
        CURLMsg *m;
        int left = 0;

        while ((m = curl_multi_info_read(l->multi, &left))) {
                HttpRequest *r = NULL;
                if (m->msg != CURLMSG_DONE)
                        continue;
                (void) curl_easy_getinfo(m->easy_handle, CURLINFO_PRIVATE, (char **) &r);
                http_transfer_done(r, m->data.result);
        }
        return 0;
}
