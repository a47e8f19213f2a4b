/*
 * oxshmem's libfabric shim: real functions over libfabric's static-inline calls.
 *
 * Most of libfabric's API (fi_fabric, fi_endpoint, fi_writemsg, fi_cq_read, ...) is static
 * inline functions that call through a provider's ops tables (rdma/fabric.h and the fi_*.h
 * headers), which Rust cannot call. Each function here is one such call, taking plain
 * arguments, so that the Rust side never builds libfabric's message structs itself. Only API
 * present in both libfabric 1.x (>= 1.17) and 2.x is used.
 */
#ifndef OXSHMEM_OFI_SHIM_H
#define OXSHMEM_OFI_SHIM_H

#include <rdma/fabric.h>
#include <rdma/fi_atomic.h>
#include <rdma/fi_cm.h>
#include <rdma/fi_domain.h>
#include <rdma/fi_endpoint.h>
#include <rdma/fi_eq.h>
#include <rdma/fi_errno.h>
#include <rdma/fi_rma.h>
#include <stddef.h>
#include <stdint.h>
#include <sys/types.h>

/* FI_VERSION(FI_MAJOR_VERSION, FI_MINOR_VERSION) of the headers this was built against. */
uint32_t oxs_build_version(void);
/* fi_allocinfo(). */
struct fi_info *oxs_allocinfo(void);

int oxs_fabric(struct fi_info *info, struct fid_fabric **fabric);
int oxs_domain(struct fid_fabric *fabric, struct fi_info *info, struct fid_domain **domain);
int oxs_endpoint(struct fid_domain *domain, struct fi_info *info, struct fid_ep **ep);
/* A completion queue of FI_CQ_FORMAT_CONTEXT entries with the given wait object. */
int oxs_cq_open(struct fid_domain *domain, size_t size, int wait_obj, struct fid_cq **cq);
/* An FI_AV_TABLE address vector. */
int oxs_av_open(struct fid_domain *domain, size_t count, struct fid_av **av);
int oxs_ep_bind(struct fid_ep *ep, struct fid *bfid, uint64_t flags);
int oxs_enable(struct fid_ep *ep);
int oxs_getname(struct fid_ep *ep, void *addr, size_t *addrlen);
/* Inserts one address; returns 1 on success, 0 or a negative error otherwise. */
int oxs_av_insert(struct fid_av *av, const void *addr, uint64_t *fi_addr);
int oxs_mr_reg(struct fid_domain *domain, const void *buf, size_t len, uint64_t access,
	       uint64_t requested_key, struct fid_mr **mr);
/* FI_MR_ENDPOINT: binds the region to the endpoint and enables it. */
int oxs_mr_bind_ep(struct fid_mr *mr, struct fid_ep *ep, uint64_t flags);
uint64_t oxs_mr_key(struct fid_mr *mr);
void *oxs_mr_desc(struct fid_mr *mr);
int oxs_close(struct fid *fid);
struct fid *oxs_fid_ep(struct fid_ep *ep);
struct fid *oxs_fid_cq(struct fid_cq *cq);
struct fid *oxs_fid_av(struct fid_av *av);
struct fid *oxs_fid_mr(struct fid_mr *mr);
struct fid *oxs_fid_domain(struct fid_domain *domain);
struct fid *oxs_fid_fabric(struct fid_fabric *fabric);

/* fi_writemsg / fi_readmsg of one contiguous buffer. */
ssize_t oxs_write(struct fid_ep *ep, const void *buf, size_t len, void *desc, uint64_t dest,
		  uint64_t addr, uint64_t key, void *context, uint64_t flags);
ssize_t oxs_read(struct fid_ep *ep, void *buf, size_t len, void *desc, uint64_t src,
		 uint64_t addr, uint64_t key, void *context, uint64_t flags);
/* fi_atomicmsg / fi_fetch_atomicmsg / fi_compare_atomicmsg on one element. */
ssize_t oxs_atomic(struct fid_ep *ep, const void *operand, void *desc, uint64_t dest,
		   uint64_t addr, uint64_t key, int datatype, int op, void *context, uint64_t flags);
ssize_t oxs_fetch_atomic(struct fid_ep *ep, const void *operand, void *desc, void *result,
			 void *result_desc, uint64_t dest, uint64_t addr, uint64_t key,
			 int datatype, int op, void *context, uint64_t flags);
ssize_t oxs_compare_atomic(struct fid_ep *ep, const void *operand, void *desc,
			   const void *compare, void *compare_desc, void *result,
			   void *result_desc, uint64_t dest, uint64_t addr, uint64_t key,
			   int datatype, int op, void *context, uint64_t flags);
/* kind 0: fi_atomicvalid, 1: fi_fetch_atomicvalid, 2: fi_compare_atomicvalid. Returns 0 and
 * sets *count when the provider supports (datatype, op). */
int oxs_atomic_valid(struct fid_ep *ep, int kind, int datatype, int op, size_t *count);

/* Reads up to `count` completions; stores each entry's op_context in ctx[]. Returns the
 * number read, -FI_EAGAIN when there is none, -FI_EAVAIL when an error entry is next. */
ssize_t oxs_cq_read(struct fid_cq *cq, void **ctx, size_t count);
/* Reads one error entry: its op_context, error and a description (fi_cq_strerror). */
ssize_t oxs_cq_readerr(struct fid_cq *cq, void **ctx, int *err, int *prov_errno, char *msg,
		       size_t msglen);

#endif
