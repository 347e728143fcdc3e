/* pincache-doctor - the probing half of `pincache doctor` (the sentences
 * are the script's).  Prints "key value" lines on stdout, one fact each.
 *
 *   machine        the CUDA driver (dlopen of libcuda.so.1 by soname, never
 *                  linked), its version, cuInit, the devices and their
 *                  names, whether cuGetProcAddress gives cuCtxRecordEvent at
 *                  12050 (context-wide fences); which cudart sonames the
 *                  loader finds; RLIMIT_MEMLOCK; the CPUs this process may
 *                  run on.  No context is made, nothing is allocated.
 *   inspect FILE   what a program or library file says about CUDA without
 *                  running it: its ELF NEEDED list, cudart defined in it
 *                  (static cudart), the CUDA functions it imports or
 *                  exports, and the sonames and marker strings in its bytes.
 *
 * Run with LD_PRELOAD unset (the script does), so that no interposer,
 * pincache included, sees these calls. */
#include "config.h"
#include <dlfcn.h>
#include <elf.h>
#include <fcntl.h>
#include <link.h>
#include <sched.h>
#include <stdio.h>
#include <string.h>
#include <sys/mman.h>
#include <sys/resource.h>
#include <sys/stat.h>
#include <unistd.h>
#include <cuda.h>

#define PC_MAX_GPUS 64

static void pc_kv_path(const char *key, const char *extra, void *h)
{
    struct link_map *lm = NULL;

    if (dlinfo(h, RTLD_DI_LINKMAP, &lm) == 0 && lm && lm->l_name && lm->l_name[0])
        printf("%s %s%s\n", key, extra, lm->l_name);
    else
        printf("%s %s?\n", key, extra);
}

/* cuCtxRecordEvent through cuGetProcAddress at 12050, as pincache's fences
 * ask for it (src/core/fence_cuda.c). */
static void pc_fences(void *h)
{
    __typeof__(&cuGetProcAddress) gpa2 = (__typeof__(gpa2))dlsym(h, "cuGetProcAddress_v2");
    CUresult (*gpa1)(const char *, void **, int, cuuint64_t) =
        (CUresult (*)(const char *, void **, int, cuuint64_t))dlsym(h, "cuGetProcAddress");
    CUdriverProcAddressQueryResult st = CU_GET_PROC_ADDRESS_SYMBOL_NOT_FOUND;
    void *fn = NULL;
    CUresult r;

    if (gpa2)
        r = gpa2("cuCtxRecordEvent", &fn, 12050, CU_GET_PROC_ADDRESS_DEFAULT, &st);
    else if (gpa1)
        r = gpa1("cuCtxRecordEvent", &fn, 12050, CU_GET_PROC_ADDRESS_DEFAULT);
    else {
        printf("fences unknown no cuGetProcAddress in the driver\n");
        return;
    }
    if (r == CUDA_SUCCESS && fn)
        printf("fences yes\n");
    else if (st == CU_GET_PROC_ADDRESS_VERSION_NOT_SUFFICIENT)
        printf("fences no version not sufficient\n");
    else
        printf("fences no cuGetProcAddress answered %d\n", (int)r);
}

static void pc_driver(const char *soname)
{
    void *h = dlopen(soname, RTLD_NOW | RTLD_LOCAL);
    __typeof__(&cuDriverGetVersion) version;
    __typeof__(&cuInit) init;
    __typeof__(&cuDeviceGetCount) count;
    __typeof__(&cuDeviceGet) get;
    __typeof__(&cuDeviceGetName) name;
    int v = 0, n = 0;
    CUresult r;

    if (!h) {
        const char *e = dlerror();
        printf("driver absent %s\n", e ? e : "");
        return;
    }
    pc_kv_path("driver", "found ", h);
    version = (__typeof__(version))dlsym(h, "cuDriverGetVersion");
    init = (__typeof__(init))dlsym(h, "cuInit");
    count = (__typeof__(count))dlsym(h, "cuDeviceGetCount");
    get = (__typeof__(get))dlsym(h, "cuDeviceGet");
    name = (__typeof__(name))dlsym(h, "cuDeviceGetName");
    if (version && version(&v) == CUDA_SUCCESS)
        printf("driver_version %d\n", v);
    pc_fences(h);
    if (!init) {
        printf("init missing\n");
        return;
    }
    r = init(0);
    printf("init %d\n", (int)r);
    if (r != CUDA_SUCCESS || !count || count(&n) != CUDA_SUCCESS)
        return;
    printf("gpus %d\n", n);
    for (int i = 0; i < n && i < PC_MAX_GPUS; i++) {
        char buf[256] = "";
        CUdevice d;
        if (get && name && get(&d, i) == CUDA_SUCCESS && name(buf, (int)sizeof buf - 1, d) == CUDA_SUCCESS)
            printf("gpu %d %s\n", i, buf);
        else
            printf("gpu %d ?\n", i);
    }
    /* Not closed: a driver's teardown is not ours to run early. */
}

static void pc_rlimit(const char *key, rlim_t v)
{
    if (v == RLIM_INFINITY)
        printf("%s unlimited\n", key);
    else
        printf("%s %llu\n", key, (unsigned long long)v);
}

static int pc_machine(void)
{
    static const char *const runtimes[] = { "libcudart.so.12", "libcudart.so.13" };
    struct rlimit rl;
    cpu_set_t set;
    long online = sysconf(_SC_NPROCESSORS_ONLN);

    pc_driver("libcuda.so.1");
    for (size_t i = 0; i < sizeof runtimes / sizeof runtimes[0]; i++) {
        void *h = dlopen(runtimes[i], RTLD_LAZY | RTLD_LOCAL);
        char key[64];
        snprintf(key, sizeof key, "cudart %s", runtimes[i]);
        if (h)
            pc_kv_path(key, "", h);
        else
            printf("%s absent\n", key);
    }
    if (getrlimit(RLIMIT_MEMLOCK, &rl) == 0) {
        pc_rlimit("memlock_soft", rl.rlim_cur);
        pc_rlimit("memlock_hard", rl.rlim_max);
    }
    if (sched_getaffinity(0, sizeof set, &set) == 0 && CPU_COUNT(&set) > 0)
        printf("cpus %d\n", CPU_COUNT(&set));
    if (online > 0)
        printf("cpus_online %ld\n", online);
    return 0;
}

/* --- inspect: an ELF file read, never loaded or run --- */

struct pc_elf {
    const unsigned char *b;
    size_t n;
};

static int pc_in(const struct pc_elf *f, uint64_t off, uint64_t len)
{
    return off <= f->n && len <= f->n - off;
}

static const char *pc_str(const struct pc_elf *f, const Elf64_Shdr *strtab, uint64_t i)
{
    const char *s;

    if (!strtab || i >= strtab->sh_size || !pc_in(f, strtab->sh_offset, strtab->sh_size))
        return NULL;
    s = (const char *)f->b + strtab->sh_offset + i;
    return memchr(s, '\0', strtab->sh_size - i) ? s : NULL;
}

/* The runtime's own functions, defined in a program: cudart linked in. */
static int pc_is_cudart_def(const char *s)
{
    return strcmp(s, "__cudaRegisterFatBinary") == 0 || strncmp(s, "cudaGetDriverEntryPoint", 23) == 0 ||
           strcmp(s, "cudaGetErrorName") == 0;
}

/* The pinned-memory and copy functions a program can import or a
 * library export, which pincache serves or wraps. */
static int pc_is_cuda_fn(const char *s)
{
    return (strncmp(s, "cuda", 4) == 0 && s[4] >= 'A' && s[4] <= 'Z') ||
           (strncmp(s, "cu", 2) == 0 && s[2] >= 'A' && s[2] <= 'Z');
}

static void pc_syms(const struct pc_elf *f, const Elf64_Shdr *sh, const Elf64_Shdr *shs, int nsh, int *cudart_def)
{
    const Elf64_Shdr *strtab = sh->sh_link < (unsigned)nsh ? &shs[sh->sh_link] : NULL;
    uint64_t count;
    int exports = 0;

    if (sh->sh_entsize != sizeof(Elf64_Sym) || !pc_in(f, sh->sh_offset, sh->sh_size))
        return;
    count = sh->sh_size / sizeof(Elf64_Sym);
    for (uint64_t i = 1; i < count; i++) {
        const Elf64_Sym *s = (const Elf64_Sym *)(f->b + sh->sh_offset) + i;
        const char *name = pc_str(f, strtab, s->st_name);
        int bind = ELF64_ST_BIND(s->st_info);
        if (!name || !name[0])
            continue;
        if (s->st_shndx != SHN_UNDEF && pc_is_cudart_def(name))
            *cudart_def = 1;
        if (sh->sh_type != SHT_DYNSYM || !pc_is_cuda_fn(name))
            continue;
        if (s->st_shndx == SHN_UNDEF)
            printf("imports %s\n", name);
        else if ((bind == STB_GLOBAL || bind == STB_WEAK) && ELF64_ST_VISIBILITY(s->st_other) == STV_DEFAULT &&
                 exports++ < 8)
            printf("exports %s\n", name);
    }
    if (exports > 8)
        printf("exports_more %d\n", exports - 8);
}

static void pc_needed(const struct pc_elf *f, const Elf64_Shdr *sh, const Elf64_Shdr *shs, int nsh)
{
    const Elf64_Shdr *strtab = sh->sh_link < (unsigned)nsh ? &shs[sh->sh_link] : NULL;

    if (!pc_in(f, sh->sh_offset, sh->sh_size))
        return;
    for (uint64_t i = 0; i < sh->sh_size / sizeof(Elf64_Dyn); i++) {
        const Elf64_Dyn *d = (const Elf64_Dyn *)(f->b + sh->sh_offset) + i;
        const char *s;
        if (d->d_tag == DT_NULL)
            break;
        if (d->d_tag == DT_NEEDED && (s = pc_str(f, strtab, d->d_un.d_val)))
            printf("needed %s\n", s);
    }
}

/* In the file's loaded sections only where it has section headers: a
 * debug build of any program that includes the CUDA headers carries the
 * runtime's enumerators in .debug_str. */
static int pc_has(const struct pc_elf *f, const char *s)
{
    const Elf64_Ehdr *eh = (const Elf64_Ehdr *)f->b;
    const Elf64_Shdr *shs;
    int elf = f->n >= sizeof *eh && memcmp(f->b, ELFMAG, SELFMAG) == 0 && f->b[EI_CLASS] == ELFCLASS64;

    if (!elf || eh->e_shnum == 0 || eh->e_shentsize != sizeof(Elf64_Shdr) ||
        !pc_in(f, eh->e_shoff, (uint64_t)eh->e_shnum * sizeof(Elf64_Shdr)))
        return memmem(f->b, f->n, s, strlen(s)) != NULL;
    shs = (const Elf64_Shdr *)(f->b + eh->e_shoff);
    for (int i = 0; i < eh->e_shnum; i++)
        if ((shs[i].sh_flags & SHF_ALLOC) && shs[i].sh_type != SHT_NOBITS &&
            pc_in(f, shs[i].sh_offset, shs[i].sh_size) &&
            memmem(f->b + shs[i].sh_offset, shs[i].sh_size, s, strlen(s)))
            return 1;
    return 0;
}

static void pc_elf64(const struct pc_elf *f)
{
    const Elf64_Ehdr *eh = (const Elf64_Ehdr *)f->b;
    const Elf64_Shdr *shs;
    int interp = 0, dynamic = 0, cudart_def = 0;

    printf("kind elf\n");
    printf("type %s\n", eh->e_type == ET_EXEC ? "exec" : eh->e_type == ET_DYN ? "dyn" : "other");
    if (eh->e_phentsize == sizeof(Elf64_Phdr) && pc_in(f, eh->e_phoff, (uint64_t)eh->e_phnum * sizeof(Elf64_Phdr)))
        for (int i = 0; i < eh->e_phnum; i++) {
            const Elf64_Phdr *ph = (const Elf64_Phdr *)(f->b + eh->e_phoff) + i;
            interp |= ph->p_type == PT_INTERP;
            dynamic |= ph->p_type == PT_DYNAMIC;
        }
    printf("interp %s\n", interp ? "yes" : "no");
    printf("dynamic %s\n", dynamic ? "yes" : "no");
    if (eh->e_shentsize == sizeof(Elf64_Shdr) && pc_in(f, eh->e_shoff, (uint64_t)eh->e_shnum * sizeof(Elf64_Shdr))) {
        shs = (const Elf64_Shdr *)(f->b + eh->e_shoff);
        for (int i = 0; i < eh->e_shnum; i++) {
            if (shs[i].sh_type == SHT_DYNAMIC)
                pc_needed(f, &shs[i], shs, eh->e_shnum);
            else if (shs[i].sh_type == SHT_DYNSYM || shs[i].sh_type == SHT_SYMTAB)
                pc_syms(f, &shs[i], shs, eh->e_shnum, &cudart_def);
        }
    }
    /* A stripped static cudart keeps its error names' table. */
    if (cudart_def)
        printf("cudart_inside symbols\n");
    else if (pc_has(f, "cudaErrorCudartUnloading"))
        printf("cudart_inside strings\n");
}

static int pc_inspect(const char *path)
{
    struct pc_elf f;
    struct stat sb;
    void *m;
    int fd = open(path, O_RDONLY | O_CLOEXEC);

    if (fd < 0 || fstat(fd, &sb) != 0 || !S_ISREG(sb.st_mode) || sb.st_size < 4) {
        printf("kind unreadable\n");
        if (fd >= 0)
            close(fd);
        return 0;
    }
    m = mmap(NULL, (size_t)sb.st_size, PROT_READ, MAP_PRIVATE, fd, 0);
    close(fd);
    if (m == MAP_FAILED) {
        printf("kind unreadable\n");
        return 0;
    }
    f.b = m;
    f.n = (size_t)sb.st_size;
    if (f.n >= sizeof(Elf64_Ehdr) && memcmp(f.b, ELFMAG, SELFMAG) == 0 && f.b[EI_CLASS] == ELFCLASS64 &&
        f.b[EI_DATA] == (__BYTE_ORDER__ == __ORDER_LITTLE_ENDIAN__ ? ELFDATA2LSB : ELFDATA2MSB))
        pc_elf64(&f);
    else if (memcmp(f.b, ELFMAG, SELFMAG) == 0)
        printf("kind elf-foreign\n");
    else if (f.b[0] == '#' && f.b[1] == '!')
        printf("kind script\n");
    else
        printf("kind other\n");
    if (pc_has(&f, "libcuda.so.1"))
        printf("names libcuda.so.1\n");
    if (pc_has(&f, "libcudart.so"))
        printf("names libcudart\n");
    munmap(m, f.n);
    return 0;
}

int main(int argc, char **argv)
{
    if (argc == 2 && strcmp(argv[1], "machine") == 0)
        return pc_machine();
    if (argc == 3 && strcmp(argv[1], "inspect") == 0)
        return pc_inspect(argv[2]);
    fputs("usage: pincache-doctor machine\n       pincache-doctor inspect FILE\n", stderr);
    return 2;
}
