/* The offload helper (docs/architecture.md, "Keys off the loop"): a FIFO of key generation jobs,
 * one worker thread, and an eventfd watched by the loop. The mutex guards
 * only the two job lists and the stop flag; callbacks always run on the
 * loop thread without the lock held, so they may submit more work or free
 * the helper. */
#include <openssl/crypto.h>
#include <pthread.h>
#include <signal.h>
#include <stdint.h>
#include <sys/epoll.h>
#include <sys/eventfd.h>

#include "offload.h"
#include "pki-internal.h"

typedef struct Job Job;
struct Job {
        Job *next;
        PkiKeyType type;
        int error;
        EVP_PKEY *key;
        OffloadKeygenFunc cb;
        void *userdata;
};

typedef struct JobList {
        Job *head, *tail;
} JobList;

struct Offload {
        sd_event *event;
        sd_event_source *source;
        int efd;

        pthread_mutex_t lock;
        pthread_cond_t cond;
        pthread_t thread;
        bool thread_started;
        /* Guarded by lock. */
        JobList pending, done;
        bool stop;

        /* Loop thread only. */
        unsigned in_flight, max_pending;
        bool dispatching, freed;
};

static void list_push(JobList *l, Job *j)
{
        j->next = NULL;
        if (l->tail)
                l->tail->next = j;
        else
                l->head = j;
        l->tail = j;
}

static Job *list_pop(JobList *l)
{
        Job *j = l->head;

        if (j) {
                l->head = j->next;
                if (!l->head)
                        l->tail = NULL;
                j->next = NULL;
        }
        return j;
}

static void *worker(void *userdata)
{
        Offload *o = userdata;

        (void) pthread_mutex_lock(&o->lock);
        for (;;) {
                while (!o->stop && !o->pending.head)
                        (void) pthread_cond_wait(&o->cond, &o->lock);
                if (o->stop)
                        break;
                Job *j = list_pop(&o->pending);
                (void) pthread_mutex_unlock(&o->lock);

                j->error = pki_key_new(j->type, &j->key);

                (void) pthread_mutex_lock(&o->lock);
                list_push(&o->done, j);
                uint64_t one = 1;
                /* Cannot block: the counter would need 2^64 unread completions. */
                (void) !write(o->efd, &one, sizeof one);
        }
        (void) pthread_mutex_unlock(&o->lock);
        OPENSSL_thread_stop();
        return NULL;
}

static void deliver(Offload *o, Job *j, int error)
{
        EVP_PKEY *key = error == 0 ? TAKE_PTR(j->key) : NULL;

        EVP_PKEY_free(j->key);
        assert(o->in_flight > 0);
        o->in_flight--;
        j->cb(o, error, key, j->userdata);
        free(j);
}

static void destroy(Offload *o)
{
        (void) sd_event_source_disable_unref(o->source);
        if (o->efd >= 0)
                (void) close(o->efd);
        (void) pthread_cond_destroy(&o->cond);
        (void) pthread_mutex_destroy(&o->lock);
        (void) sd_event_unref(o->event);
        free(o);
}

static int on_completion(sd_event_source *s, int fd, uint32_t revents, void *userdata)
{
        Offload *o = userdata;
        uint64_t n;

        (void) !read(fd, &n, sizeof n);
        o->dispatching = true;
        while (!o->freed) {
                (void) pthread_mutex_lock(&o->lock);
                Job *j = list_pop(&o->done);
                (void) pthread_mutex_unlock(&o->lock);
                if (!j)
                        break;
                deliver(o, j, j->error);
        }
        o->dispatching = false;
        /* A callback freed the helper: finish what pki_offload_free() left to us. */
        if (o->freed)
                destroy(o);
        return 0;
}

static int start_worker(Offload *o)
{
        sigset_t all, old;
        int r;

        /* Signals belong to the loop's signalfd, never to the worker. */
        (void) sigfillset(&all);
        r = -pthread_sigmask(SIG_BLOCK, &all, &old);
        if (r < 0)
                return r;
        r = -pthread_create(&o->thread, NULL, worker, o);
        (void) pthread_sigmask(SIG_SETMASK, &old, NULL);
        if (r < 0)
                return r;
        o->thread_started = true;
        return 0;
}

int pki_offload_new(sd_event *e, unsigned max_pending, Offload **ret)
{
        Offload *o = NULL;
        int r;

        assert_return(e && ret, -EINVAL);
        o = calloc(1, sizeof *o);
        if (!o)
                return -ENOMEM;
        o->efd = -EBADF;
        o->max_pending = max_pending ? max_pending : PKI_OFFLOAD_MAX_PENDING;
        o->event = sd_event_ref(e);
        (void) pthread_mutex_init(&o->lock, NULL);
        (void) pthread_cond_init(&o->cond, NULL);

        o->efd = eventfd(0, EFD_CLOEXEC | EFD_NONBLOCK);
        if (o->efd < 0) {
                r = -errno;
                destroy(o);
                return r;
        }
        r = sd_event_add_io(e, &o->source, o->efd, EPOLLIN, on_completion, o);
        if (r >= 0) {
                (void) sd_event_source_set_description(o->source, "pki-offload");
                r = start_worker(o);
        }
        if (r < 0) {
                destroy(o);
                return r;
        }
        *ret = o;
        return 0;
}

Offload *pki_offload_free(Offload *o)
{
        if (!o || o->freed)
                return NULL;
        o->freed = true;

        if (o->thread_started) {
                (void) pthread_mutex_lock(&o->lock);
                o->stop = true;
                (void) pthread_cond_signal(&o->cond);
                (void) pthread_mutex_unlock(&o->lock);
                /* Waits for at most the one job the worker is running. */
                (void) pthread_join(o->thread, NULL);
                o->thread_started = false;
        }
        /* No other thread now: in submission order, finished ones first. */
        for (Job *j; (j = list_pop(&o->done)) || (j = list_pop(&o->pending));)
                deliver(o, j, -ECANCELED);
        if (!o->dispatching)
                destroy(o);
        return NULL;
}

int pki_offload_keygen(Offload *o, PkiKeyType type, OffloadKeygenFunc cb, void *userdata)
{
        Job *j = NULL;

        assert_return(o && cb, -EINVAL);
        assert_return(type >= 0 && type < _PKI_KEY_TYPE_MAX, -EINVAL);
        if (o->freed)
                return -ECANCELED;
        if (o->in_flight >= o->max_pending)
                return -EBUSY;
        j = calloc(1, sizeof *j);
        if (!j)
                return -ENOMEM;
        *j = (Job){.type = type, .cb = cb, .userdata = userdata};
        (void) pthread_mutex_lock(&o->lock);
        list_push(&o->pending, j);
        (void) pthread_cond_signal(&o->cond);
        (void) pthread_mutex_unlock(&o->lock);
        o->in_flight++;
        return 0;
}

unsigned pki_offload_in_flight(const Offload *o)
{
        return o ? o->in_flight : 0;
}
