// capfree.cu - which of the calls a release of idle pinned blocks makes are
// allowed during a stream capture, and whether the capture survives them:
// what pincache needed before it releases its idle blocks for an
// allocation that runs out of pinned memory inside a capture (until then
// nothing was released there; run 15 had measured cudaHostAlloc,
// cudaFreeHost and cudaEventQuery only).  Run 92 (2026-12-06, an H100):
// docs/runtime-facts.md, "Calls a release makes, during a stream capture".
//
// Each case: stream C begins a capture (runtime, mode global, thread-local
// or relaxed) and captures a kernel; then, on the capturing thread or on
// another one, whose own capture mode (cudaThreadExchangeStreamCaptureMode)
// is global, thread-local or relaxed, one call:
//   freehost     cudaFreeHost of a cudaHostAlloc block made before
//   unregister   cudaHostUnregister of an mmap'd range registered before
//   register     cudaHostRegister of an mmap'd range
//   evsync       cudaEventSynchronize of an event recorded before on stream W
//   ssync_other  cudaStreamSynchronize(W), a non-capturing created stream
//   ctxsync      cudaDeviceSynchronize
//   drv_evquery  cuEventQuery of that event
//   ctx_evquery  cuEventQuery of an event cuCtxRecordEvent recorded before
//   oom_rt       cudaHostAlloc of 1 TiB (refused for memory: does the
//                failure itself hurt the capture?)
//   oom_drv      cuMemHostAlloc of 1 TiB
//   peek         cudaPeekAtLastError (nothing pending): does asking hurt?
//   drv_then_rt  with an error pending (cudaSetDevice(99): 101), cuMemHostAlloc
//                of 1 TiB, then cudaHostAlloc of 4 KiB: op_rc is the
//                driver's code * 1e6 + the runtime's * 1e3 + the last error
//                after both (refused: is the runtime's second answer 900?)
// then the capture ends, its graph is launched and its kernel's effect
// checked.  One line a case:
//   CAPFREE op=.. mode=.. where=self|other tmode=.. op_rc=N end_rc=N launch_rc=N ok=0|1
//   nvcc -O2 -arch=sm_90 -o /tmp/capfree dev/probe/capfree.cu -lcuda && /tmp/capfree
#include <cuda.h>
#include <cuda_runtime.h>
#include <cstdio>
#include <cstring>
#include <sys/mman.h>
#include <thread>

#define SZ (2u << 20)

__global__ void k_add(int *x, int v) { *x += v; }

static const char *mode_name[] = { "global", "thread", "relaxed" };
enum { OP_FREEHOST, OP_UNREGISTER, OP_REGISTER, OP_EVSYNC, OP_SSYNC_OTHER, OP_CTXSYNC, OP_DRV_EVQUERY,
       OP_CTX_EVQUERY, OP_OOM_RT, OP_OOM_DRV, OP_PEEK, OP_DRV_THEN_RT, OP_N };
static const char *op_name[] = { "freehost", "unregister", "register", "evsync", "ssync_other", "ctxsync",
                                 "drv_evquery", "ctx_evquery", "oom_rt", "oom_drv", "peek", "drv_then_rt" };

static void *map_range(void)
{
    void *m = mmap(NULL, SZ, PROT_READ | PROT_WRITE, MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);

    if (m == MAP_FAILED)
        return NULL;
    memset(m, 1, SZ);
    return m;
}

static void one(int op, int mode, int other, int tmode, cudaStream_t w, cudaStream_t c, int *dev_x)
{
    void *blk = NULL, *reg = NULL, *fresh = NULL;
    cudaEvent_t ev;
    cudaGraph_t g = NULL;
    int op_rc = -1, end_rc = -1, launch_rc = -1, ok = 0;

    cudaEventCreateWithFlags(&ev, cudaEventDisableTiming);
    cudaMemset(dev_x, 0, sizeof(int));
    if (op == OP_FREEHOST)
        cudaHostAlloc(&blk, SZ, 0);
    if (op == OP_UNREGISTER && (reg = map_range()) != NULL)
        cudaHostRegister(reg, SZ, 0);
    if (op == OP_REGISTER)
        fresh = map_range();
    cudaDeviceSynchronize();
    cudaEventRecord(ev, w);
    if (op == OP_CTX_EVQUERY) {
        CUcontext ctx = NULL;

        cuCtxGetCurrent(&ctx);
        cuCtxRecordEvent(ctx, (CUevent)ev);
    }
    if (cudaStreamBeginCapture(c, (cudaStreamCaptureMode)mode) != cudaSuccess) {
        printf("INFO begin mode=%s refused\n", mode_name[mode]);
        return;
    }
    k_add<<<1, 1, 0, c>>>(dev_x, 1);
    auto body = [&] {
        cudaStreamCaptureMode m = (cudaStreamCaptureMode)tmode;

        cudaThreadExchangeStreamCaptureMode(&m);
        switch (op) {
        case OP_FREEHOST: op_rc = (int)cudaFreeHost(blk); break;
        case OP_UNREGISTER: op_rc = (int)cudaHostUnregister(reg); break;
        case OP_REGISTER: op_rc = (int)cudaHostRegister(fresh, SZ, 0); break;
        case OP_EVSYNC: op_rc = (int)cudaEventSynchronize(ev); break;
        case OP_SSYNC_OTHER: op_rc = (int)cudaStreamSynchronize(w); break;
        case OP_CTXSYNC: op_rc = (int)cudaDeviceSynchronize(); break;
        case OP_DRV_EVQUERY:
        case OP_CTX_EVQUERY:
            op_rc = (int)cuEventQuery((CUevent)ev);
            if (op_rc == (int)CUDA_ERROR_NOT_READY)
                op_rc = 0;
            break;
        case OP_OOM_RT: {
            void *q = NULL;

            op_rc = (int)cudaHostAlloc(&q, 1ull << 40, 0);
            if (op_rc == 0)
                cudaFreeHost(q);
            op_rc = op_rc * 1000 + (int)cudaGetLastError();   /* the code, and the last error it left */
            break;
        }
        case OP_OOM_DRV: {
            void *q = NULL;

            op_rc = (int)cuMemHostAlloc(&q, 1ull << 40, 0);
            if (op_rc == 0)
                cuMemFreeHost(q);
            op_rc = op_rc * 1000 + (int)cudaPeekAtLastError();
            break;
        }
        case OP_PEEK: op_rc = (int)cudaPeekAtLastError(); break;
        case OP_DRV_THEN_RT: {
            void *q = NULL, *r = NULL;
            int d, h;

            cudaSetDevice(99);
            d = (int)cuMemHostAlloc(&q, 1ull << 40, 0);
            if (d == 0)
                cuMemFreeHost(q);
            h = (int)cudaHostAlloc(&r, 4096, 0);
            op_rc = d * 1000000 + h * 1000 + (int)cudaGetLastError();
            if (h == 0)
                fresh = r;   /* freed after the capture */
            break;
        }
        }
        cudaThreadExchangeStreamCaptureMode(&m);   /* back to what it was */
    };
    if (other) {
        std::thread t(body);
        t.join();
    } else {
        body();
    }
    end_rc = (int)cudaStreamEndCapture(c, &g);
    if (end_rc == 0 && g) {
        cudaGraphExec_t ge = NULL;
        int x = -1;

        launch_rc = (int)cudaGraphInstantiate(&ge, g, 0);
        if (launch_rc == 0)
            launch_rc = (int)cudaGraphLaunch(ge, c);
        if (launch_rc == 0)
            launch_rc = (int)cudaStreamSynchronize(c);
        if (launch_rc == 0 && cudaMemcpy(&x, dev_x, sizeof x, cudaMemcpyDeviceToHost) == cudaSuccess)
            ok = x == 1;
        if (ge)
            cudaGraphExecDestroy(ge);
    }
    if (g)
        cudaGraphDestroy(g);
    cudaGetLastError();
    cudaDeviceSynchronize();
    printf("CAPFREE op=%s mode=%s where=%s tmode=%s op_rc=%d end_rc=%d launch_rc=%d ok=%d\n", op_name[op],
           mode_name[mode], other ? "other" : "self", mode_name[tmode], op_rc, end_rc, launch_rc, ok);
    if (op == OP_FREEHOST && op_rc != 0)
        cudaFreeHost(blk);
    if (op == OP_UNREGISTER && op_rc != 0)
        cudaHostUnregister(reg);
    if (op == OP_REGISTER && op_rc == 0)
        cudaHostUnregister(fresh);
    if (op == OP_DRV_THEN_RT && fresh) {
        cudaFreeHost(fresh);
        fresh = NULL;
    }
    if (reg)
        munmap(reg, SZ);
    if (fresh)
        munmap(fresh, SZ);
    cudaEventDestroy(ev);
}

int main(void)
{
    cudaStream_t w, c;
    int *dev_x;

    if (cudaFree(0) != cudaSuccess) {
        printf("no CUDA device\n");
        return 77;
    }
    cudaStreamCreateWithFlags(&w, cudaStreamNonBlocking);
    cudaStreamCreateWithFlags(&c, cudaStreamNonBlocking);
    cudaMalloc(&dev_x, sizeof(int));
    for (int op = 0; op < OP_N; op++)
        for (int mode = 0; mode < 3; mode++)
            for (int other = 0; other < 2; other++)
                for (int tmode = 0; tmode < 3; tmode++)
                    one(op, mode, other, tmode, w, c, dev_x);
    return 0;
}
