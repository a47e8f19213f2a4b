/*
 * raw_ofi: the reference of ofi-bench — the same operations with libfabric alone, no runtime.
 *
 * Two processes (fork) exchange their endpoint names, segment bases and keys over a
 * socketpair; each opens one RDM endpoint with FI_RMA|FI_ATOMIC exactly as oxshmem's ofi
 * transport asks (thread-safe domain, FI_DELIVERY_COMPLETE, mode 0; FI_PROVIDER picks the
 * provider). Process 0 measures against process 1, which only drives progress: it polls its
 * completion queue in a loop, the best case for a manual-progress provider.
 *
 *   put  8 B:  fi_writemsg(FI_INJECT|FI_DELIVERY_COMPLETE) then wait for its completion
 *   get  8 B:  fi_readmsg, wait
 *   fadd 8 B:  fi_fetch_atomicmsg(FI_SUM, FI_UINT64), wait
 *   bw 1 MiB:  N fi_writemsg(FI_DELIVERY_COMPLETE) with up to WINDOW in flight, wait for all
 *
 * Usage: raw_ofi LAT_ITERS BW_ITERS. Prints "RESULT <name> <value>" lines (microseconds per
 * operation, GB/s for bandwidth). Built by ofi-bench at run time: cc -O2 raw_ofi.c -lfabric.
 */
#include <errno.h>
#include <rdma/fabric.h>
#include <rdma/fi_atomic.h>
#include <rdma/fi_cm.h>
#include <rdma/fi_domain.h>
#include <rdma/fi_endpoint.h>
#include <rdma/fi_eq.h>
#include <rdma/fi_errno.h>
#include <rdma/fi_rma.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

#define BW_SIZE (1 << 20)
#define WINDOW 16
#define SEG (2 * BW_SIZE + 4096)

#define CHECK(call)                                                                    \
	do {                                                                           \
		int rc_ = (int)(call);                                                 \
		if (rc_) {                                                             \
			fprintf(stderr, "raw_ofi: %s failed: %s\n", #call, fi_strerror(-rc_)); \
			exit(1);                                                       \
		}                                                                      \
	} while (0)

static struct fid_cq *cq;
static struct fid_ep *ep;
static long outstanding;

static double now(void)
{
	struct timespec t;
	clock_gettime(CLOCK_MONOTONIC, &t);
	return t.tv_sec + t.tv_nsec * 1e-9;
}

static void full(int fd, void *buf, size_t len, int out)
{
	char *p = buf;
	while (len) {
		ssize_t n = out ? write(fd, p, len) : read(fd, p, len);
		if (n <= 0) {
			perror("raw_ofi: socketpair");
			exit(1);
		}
		p += n;
		len -= (size_t)n;
	}
}

/* Reads completions until `outstanding` drops to `target`. */
static void reap(long target)
{
	struct fi_cq_entry e[16];
	while (outstanding > target) {
		ssize_t n = fi_cq_read(cq, e, 16);
		if (n > 0) {
			outstanding -= n;
		} else if (n == -FI_EAVAIL) {
			struct fi_cq_err_entry err;
			memset(&err, 0, sizeof err);
			fi_cq_readerr(cq, &err, 0);
			fprintf(stderr, "raw_ofi: completion error: %s\n", fi_strerror(err.err));
			exit(1);
		}
	}
}

/* Posts with `post` until it does not answer -FI_EAGAIN. */
#define POST(expr)                                                                     \
	do {                                                                           \
		ssize_t r_;                                                            \
		while ((r_ = (expr)) == -FI_EAGAIN)                                    \
			reap(outstanding - 1 < 0 ? 0 : outstanding - 1);               \
		if (r_) {                                                              \
			fprintf(stderr, "raw_ofi: %s failed: %s\n", #expr, fi_strerror((int)-r_)); \
			exit(1);                                                       \
		}                                                                      \
		outstanding++;                                                         \
	} while (0)

int main(int argc, char **argv)
{
	long lat_iters = argc > 1 ? atol(argv[1]) : 2000;
	long bw_iters = argc > 2 ? atol(argv[2]) : 200;
	int sv[2];
	if (socketpair(AF_UNIX, SOCK_STREAM, 0, sv)) {
		perror("raw_ofi: socketpair");
		return 1;
	}
	pid_t child = fork();
	int rank = child == 0 ? 1 : 0;
	int sock = sv[rank];
	close(sv[1 - rank]);

	struct fi_info *hints = fi_allocinfo(), *info;
	hints->caps = FI_RMA | FI_ATOMIC;
	hints->mode = 0;
	hints->ep_attr->type = FI_EP_RDM;
	hints->domain_attr->mr_mode =
		FI_MR_LOCAL | FI_MR_VIRT_ADDR | FI_MR_ALLOCATED | FI_MR_PROV_KEY | FI_MR_ENDPOINT;
	hints->domain_attr->threading = FI_THREAD_SAFE;
	hints->tx_attr->op_flags = FI_DELIVERY_COMPLETE;
	CHECK(fi_getinfo(FI_VERSION(FI_MAJOR_VERSION, FI_MINOR_VERSION), NULL, NULL, 0, hints, &info));
	int mr_mode = info->domain_attr->mr_mode;

	struct fid_fabric *fabric;
	struct fid_domain *domain;
	struct fid_av *av;
	struct fid_mr *mr;
	CHECK(fi_fabric(info->fabric_attr, &fabric, NULL));
	CHECK(fi_domain(fabric, info, &domain, NULL));
	struct fi_cq_attr cq_attr = { .size = 4096, .format = FI_CQ_FORMAT_CONTEXT, .wait_obj = FI_WAIT_NONE };
	CHECK(fi_cq_open(domain, &cq_attr, &cq, NULL));
	struct fi_av_attr av_attr = { .type = FI_AV_TABLE, .count = 2 };
	CHECK(fi_av_open(domain, &av_attr, &av, NULL));
	CHECK(fi_endpoint(domain, info, &ep, NULL));
	CHECK(fi_ep_bind(ep, &cq->fid, FI_TRANSMIT | FI_RECV));
	CHECK(fi_ep_bind(ep, &av->fid, 0));
	CHECK(fi_enable(ep));

	char *seg = aligned_alloc(4096, SEG);
	memset(seg, rank, SEG);
	CHECK(fi_mr_reg(domain, seg, SEG, FI_READ | FI_WRITE | FI_REMOTE_READ | FI_REMOTE_WRITE, 0, 1, 0, &mr, NULL));
	if (mr_mode & FI_MR_ENDPOINT) {
		CHECK(fi_mr_bind(mr, &ep->fid, 0));
		CHECK(fi_mr_enable(mr));
	}
	void *desc = fi_mr_desc(mr);

	/* Exchange: name, base, key. */
	char name[256], peer_name[256];
	size_t len = sizeof name, peer_len;
	CHECK(fi_getname(&ep->fid, name, &len));
	uint64_t mine[2] = { (uint64_t)(uintptr_t)seg, fi_mr_key(mr) }, theirs[2];
	full(sock, &len, sizeof len, 1);
	full(sock, name, len, 1);
	full(sock, mine, sizeof mine, 1);
	full(sock, &peer_len, sizeof peer_len, 0);
	full(sock, peer_name, peer_len, 0);
	full(sock, theirs, sizeof theirs, 0);
	fi_addr_t peer;
	if (fi_av_insert(av, peer_name, 1, &peer, 0, NULL) != 1) {
		fprintf(stderr, "raw_ofi: fi_av_insert failed\n");
		return 1;
	}
	uint64_t rbase = (mr_mode & FI_MR_VIRT_ADDR) ? theirs[0] : 0;
	uint64_t rkey = theirs[1];

	if (rank == 1) {
		/* Target: drive progress until the initiator says it is done. */
		char done = 0;
		struct fi_cq_entry e[16];
		full(sock, &done, 1, 1); /* ready */
		for (long i = 0;; i++) {
			fi_cq_read(cq, e, 16);
			if ((i & 1023) == 0 && recv(sock, &done, 1, MSG_DONTWAIT) == 1)
				break;
		}
		full(sock, &done, 1, 1);
		goto out;
	}
	char ready;
	full(sock, &ready, 1, 0);

	struct iovec iov;
	struct fi_rma_iov rma;
	struct fi_msg_rma msg = { .msg_iov = &iov, .desc = &desc, .iov_count = 1, .addr = peer,
				  .rma_iov = &rma, .rma_iov_count = 1 };
	uint64_t one = 1, result;
	struct fi_ioc ioc = { &one, 1 }, res = { &result, 1 };
	struct fi_rma_ioc rioc = { rbase + 4096, 1, rkey };
	struct fi_msg_atomic amsg = { .msg_iov = &ioc, .desc = &desc, .iov_count = 1, .addr = peer,
				      .rma_iov = &rioc, .rma_iov_count = 1, .datatype = FI_UINT64,
				      .op = FI_SUM };
	void *rdesc = desc;
	long warm = lat_iters / 10 + 10;
	double t0 = 0;

	/* put 8 B + remote completion */
	for (long i = 0; i < warm + lat_iters; i++) {
		if (i == warm)
			t0 = now();
		iov = (struct iovec){ seg + BW_SIZE, 8 };
		rma = (struct fi_rma_iov){ rbase, 8, rkey };
		POST(fi_writemsg(ep, &msg, FI_INJECT | FI_DELIVERY_COMPLETE | FI_COMPLETION));
		reap(0);
	}
	printf("RESULT put_lat_us %.3f\n", (now() - t0) / lat_iters * 1e6);

	/* get 8 B */
	for (long i = 0; i < warm + lat_iters; i++) {
		if (i == warm)
			t0 = now();
		iov = (struct iovec){ seg + BW_SIZE, 8 };
		rma = (struct fi_rma_iov){ rbase, 8, rkey };
		POST(fi_readmsg(ep, &msg, FI_COMPLETION));
		reap(0);
	}
	printf("RESULT get_lat_us %.3f\n", (now() - t0) / lat_iters * 1e6);

	/* fetch-add 8 B */
	for (long i = 0; i < warm + lat_iters; i++) {
		if (i == warm)
			t0 = now();
		POST(fi_fetch_atomicmsg(ep, &amsg, &res, &rdesc, 1, FI_COMPLETION));
		reap(0);
	}
	printf("RESULT fadd_lat_us %.3f\n", (now() - t0) / lat_iters * 1e6);

	/* 1 MiB put bandwidth, WINDOW in flight */
	long bwarm = bw_iters / 10 + 2;
	for (long i = 0; i < bwarm + bw_iters; i++) {
		if (i == bwarm) {
			reap(0);
			t0 = now();
		}
		iov = (struct iovec){ seg, BW_SIZE };
		rma = (struct fi_rma_iov){ rbase, BW_SIZE, rkey };
		if (outstanding >= WINDOW)
			reap(WINDOW - 1);
		POST(fi_writemsg(ep, &msg, FI_DELIVERY_COMPLETE | FI_COMPLETION));
	}
	reap(0);
	printf("RESULT put_bw_gbs %.3f\n", (double)BW_SIZE * bw_iters / (now() - t0) / 1e9);
	fflush(stdout);

	char done = 1;
	full(sock, &done, 1, 1);
	full(sock, &done, 1, 0);
out:
	fi_close(&ep->fid);
	fi_close(&mr->fid);
	fi_close(&av->fid);
	fi_close(&cq->fid);
	fi_close(&domain->fid);
	fi_close(&fabric->fid);
	fi_freeinfo(info);
	fi_freeinfo(hints);
	if (rank == 0) {
		int st;
		waitpid(child, &st, 0);
		return WIFEXITED(st) ? WEXITSTATUS(st) : 1;
	}
	return 0;
}
