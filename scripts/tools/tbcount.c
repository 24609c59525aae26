/*
 * tbcount: a QEMU TCG plugin that counts, for every translation block, how
 * many times it ran, and writes "VADDR N_INSNS EXECS" lines at exit. With
 * `-icount` a guest's time is its instruction count, so these lines say where
 * the time of an in-kernel benchmark went, function by function
 * (scripts/tools/kprof.sh maps the addresses to the kernel's symbols).
 *
 *   qemu-system-x86_64 ... -plugin /path/tbcount.so,out=FILE
 *
 * Counting is an inline add per block, so the guest's instruction count and
 * its `-icount` time are those of a run without the plugin.
 *
 * The plugin API is declared here rather than included: Debian's QEMU ships
 * no qemu-plugin.h. These are the calls of API version 1 (QEMU 7.x and
 * later keep them).
 */
#include <inttypes.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <pthread.h>

typedef uint64_t qemu_plugin_id_t;
struct qemu_plugin_tb;
typedef struct qemu_info_t qemu_info_t;
enum qemu_plugin_op { QEMU_PLUGIN_INLINE_ADD_U64 };

typedef void (*tb_trans_cb_t)(qemu_plugin_id_t, struct qemu_plugin_tb *);
typedef void (*udata_cb_t)(qemu_plugin_id_t, void *);
void qemu_plugin_register_vcpu_tb_trans_cb(qemu_plugin_id_t, tb_trans_cb_t);
void qemu_plugin_register_atexit_cb(qemu_plugin_id_t, udata_cb_t, void *);
void qemu_plugin_register_vcpu_tb_exec_inline(struct qemu_plugin_tb *, enum qemu_plugin_op,
                                              void *, uint64_t);
size_t qemu_plugin_tb_n_insns(const struct qemu_plugin_tb *);
uint64_t qemu_plugin_tb_vaddr(const struct qemu_plugin_tb *);

#define EXPORT __attribute__((visibility("default")))
EXPORT int qemu_plugin_version = 1;

/* One translated block; blocks are never freed (a run translates a few
 * thousand). A block translated again gets a second record; kprof.sh adds
 * them up by address. */
struct block {
    uint64_t vaddr;
    uint64_t n_insns;
    uint64_t execs;
    struct block *next;
};

static struct block *blocks;
static pthread_mutex_t lock = PTHREAD_MUTEX_INITIALIZER;
static char out_path[4096] = "tbcount.out";

static void tb_trans(qemu_plugin_id_t id, struct qemu_plugin_tb *tb)
{
    struct block *b = calloc(1, sizeof(*b));
    (void)id;
    if (!b) {
        return;
    }
    b->vaddr = qemu_plugin_tb_vaddr(tb);
    b->n_insns = qemu_plugin_tb_n_insns(tb);
    pthread_mutex_lock(&lock);
    b->next = blocks;
    blocks = b;
    pthread_mutex_unlock(&lock);
    qemu_plugin_register_vcpu_tb_exec_inline(tb, QEMU_PLUGIN_INLINE_ADD_U64, &b->execs, 1);
}

static void at_exit(qemu_plugin_id_t id, void *p)
{
    FILE *f = fopen(out_path, "w");
    (void)id;
    (void)p;
    if (!f) {
        fprintf(stderr, "tbcount: cannot write %s\n", out_path);
        return;
    }
    for (struct block *b = blocks; b; b = b->next) {
        if (b->execs) {
            fprintf(f, "%" PRIx64 " %" PRIu64 " %" PRIu64 "\n", b->vaddr, b->n_insns, b->execs);
        }
    }
    fclose(f);
}

EXPORT int qemu_plugin_install(qemu_plugin_id_t id, const qemu_info_t *info, int argc, char **argv)
{
    (void)info;
    for (int i = 0; i < argc; i++) {
        if (strncmp(argv[i], "out=", 4) == 0 && strlen(argv[i] + 4) < sizeof(out_path)) {
            strcpy(out_path, argv[i] + 4);
        } else {
            fprintf(stderr, "tbcount: unknown argument '%s' (takes out=FILE)\n", argv[i]);
            return -1;
        }
    }
    qemu_plugin_register_vcpu_tb_trans_cb(id, tb_trans);
    qemu_plugin_register_atexit_cb(id, at_exit, NULL);
    return 0;
}
