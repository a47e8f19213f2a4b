/* See shim.h: one real function per libfabric static-inline call that oxshmem uses. */
#include "shim.h"

#include <stdio.h>
#include <string.h>

uint32_t oxs_build_version(void) { return FI_VERSION(FI_MAJOR_VERSION, FI_MINOR_VERSION); }

struct fi_info *oxs_allocinfo(void) { return fi_allocinfo(); }

int oxs_fabric(struct fi_info *info, struct fid_fabric **fabric)
{
	return fi_fabric(info->fabric_attr, fabric, NULL);
}

int oxs_domain(struct fid_fabric *fabric, struct fi_info *info, struct fid_domain **domain)
{
	return fi_domain(fabric, info, domain, NULL);
}

int oxs_endpoint(struct fid_domain *domain, struct fi_info *info, struct fid_ep **ep)
{
	return fi_endpoint(domain, info, ep, NULL);
}

int oxs_cq_open(struct fid_domain *domain, size_t size, int wait_obj, struct fid_cq **cq)
{
	struct fi_cq_attr attr;
	memset(&attr, 0, sizeof attr);
	attr.size = size;
	attr.format = FI_CQ_FORMAT_CONTEXT;
	attr.wait_obj = (enum fi_wait_obj)wait_obj;
	attr.wait_cond = FI_CQ_COND_NONE;
	return fi_cq_open(domain, &attr, cq, NULL);
}

int oxs_av_open(struct fid_domain *domain, size_t count, struct fid_av **av)
{
	struct fi_av_attr attr;
	memset(&attr, 0, sizeof attr);
	attr.type = FI_AV_TABLE;
	attr.count = count;
	return fi_av_open(domain, &attr, av, NULL);
}

int oxs_ep_bind(struct fid_ep *ep, struct fid *bfid, uint64_t flags) { return fi_ep_bind(ep, bfid, flags); }

int oxs_enable(struct fid_ep *ep) { return fi_enable(ep); }

int oxs_getname(struct fid_ep *ep, void *addr, size_t *addrlen) { return fi_getname(&ep->fid, addr, addrlen); }

int oxs_av_insert(struct fid_av *av, const void *addr, uint64_t *fi_addr)
{
	fi_addr_t a = FI_ADDR_NOTAVAIL;
	int rc = fi_av_insert(av, addr, 1, &a, 0, NULL);
	*fi_addr = a;
	return rc;
}

int oxs_mr_reg(struct fid_domain *domain, const void *buf, size_t len, uint64_t access,
	       uint64_t requested_key, struct fid_mr **mr)
{
	return fi_mr_reg(domain, buf, len, access, 0, requested_key, 0, mr, NULL);
}

int oxs_mr_bind_ep(struct fid_mr *mr, struct fid_ep *ep, uint64_t flags)
{
	int rc = fi_mr_bind(mr, &ep->fid, flags);
	if (rc)
		return rc;
	return fi_mr_enable(mr);
}

uint64_t oxs_mr_key(struct fid_mr *mr) { return fi_mr_key(mr); }
void *oxs_mr_desc(struct fid_mr *mr) { return fi_mr_desc(mr); }
int oxs_close(struct fid *fid) { return fi_close(fid); }
struct fid *oxs_fid_ep(struct fid_ep *ep) { return &ep->fid; }
struct fid *oxs_fid_cq(struct fid_cq *cq) { return &cq->fid; }
struct fid *oxs_fid_av(struct fid_av *av) { return &av->fid; }
struct fid *oxs_fid_mr(struct fid_mr *mr) { return &mr->fid; }
struct fid *oxs_fid_domain(struct fid_domain *domain) { return &domain->fid; }
struct fid *oxs_fid_fabric(struct fid_fabric *fabric) { return &fabric->fid; }

ssize_t oxs_write(struct fid_ep *ep, const void *buf, size_t len, void *desc, uint64_t dest,
		  uint64_t addr, uint64_t key, void *context, uint64_t flags)
{
	struct iovec iov = { (void *)buf, len };
	struct fi_rma_iov rma = { addr, len, key };
	struct fi_msg_rma msg;
	memset(&msg, 0, sizeof msg);
	msg.msg_iov = &iov;
	msg.desc = &desc;
	msg.iov_count = 1;
	msg.addr = dest;
	msg.rma_iov = &rma;
	msg.rma_iov_count = 1;
	msg.context = context;
	return fi_writemsg(ep, &msg, flags);
}

ssize_t oxs_read(struct fid_ep *ep, void *buf, size_t len, void *desc, uint64_t src,
		 uint64_t addr, uint64_t key, void *context, uint64_t flags)
{
	struct iovec iov = { buf, len };
	struct fi_rma_iov rma = { addr, len, key };
	struct fi_msg_rma msg;
	memset(&msg, 0, sizeof msg);
	msg.msg_iov = &iov;
	msg.desc = &desc;
	msg.iov_count = 1;
	msg.addr = src;
	msg.rma_iov = &rma;
	msg.rma_iov_count = 1;
	msg.context = context;
	return fi_readmsg(ep, &msg, flags);
}

static void atomic_msg(struct fi_msg_atomic *msg, struct fi_ioc *ioc, void **desc,
		       struct fi_rma_ioc *rma, uint64_t dest, int datatype, int op, void *context)
{
	memset(msg, 0, sizeof *msg);
	msg->msg_iov = ioc;
	msg->desc = desc;
	msg->iov_count = 1;
	msg->addr = dest;
	msg->rma_iov = rma;
	msg->rma_iov_count = 1;
	msg->datatype = (enum fi_datatype)datatype;
	msg->op = (enum fi_op)op;
	msg->context = context;
}

ssize_t oxs_atomic(struct fid_ep *ep, const void *operand, void *desc, uint64_t dest,
		   uint64_t addr, uint64_t key, int datatype, int op, void *context, uint64_t flags)
{
	struct fi_ioc ioc = { (void *)operand, 1 };
	struct fi_rma_ioc rma = { addr, 1, key };
	struct fi_msg_atomic msg;
	atomic_msg(&msg, &ioc, &desc, &rma, dest, datatype, op, context);
	return fi_atomicmsg(ep, &msg, flags);
}

ssize_t oxs_fetch_atomic(struct fid_ep *ep, const void *operand, void *desc, void *result,
			 void *result_desc, uint64_t dest, uint64_t addr, uint64_t key,
			 int datatype, int op, void *context, uint64_t flags)
{
	struct fi_ioc ioc = { (void *)operand, 1 };
	struct fi_ioc res = { result, 1 };
	struct fi_rma_ioc rma = { addr, 1, key };
	struct fi_msg_atomic msg;
	atomic_msg(&msg, &ioc, &desc, &rma, dest, datatype, op, context);
	return fi_fetch_atomicmsg(ep, &msg, &res, &result_desc, 1, flags);
}

ssize_t oxs_compare_atomic(struct fid_ep *ep, const void *operand, void *desc,
			   const void *compare, void *compare_desc, void *result,
			   void *result_desc, uint64_t dest, uint64_t addr, uint64_t key,
			   int datatype, int op, void *context, uint64_t flags)
{
	struct fi_ioc ioc = { (void *)operand, 1 };
	struct fi_ioc cmp = { (void *)compare, 1 };
	struct fi_ioc res = { result, 1 };
	struct fi_rma_ioc rma = { addr, 1, key };
	struct fi_msg_atomic msg;
	atomic_msg(&msg, &ioc, &desc, &rma, dest, datatype, op, context);
	return fi_compare_atomicmsg(ep, &msg, &cmp, &compare_desc, 1, &res, &result_desc, 1, flags);
}

int oxs_atomic_valid(struct fid_ep *ep, int kind, int datatype, int op, size_t *count)
{
	switch (kind) {
	case 0:
		return fi_atomicvalid(ep, (enum fi_datatype)datatype, (enum fi_op)op, count);
	case 1:
		return fi_fetch_atomicvalid(ep, (enum fi_datatype)datatype, (enum fi_op)op, count);
	default:
		return fi_compare_atomicvalid(ep, (enum fi_datatype)datatype, (enum fi_op)op, count);
	}
}

#define OXS_CQ_BATCH 64

static ssize_t copy_ctx(struct fi_cq_entry *e, ssize_t n, void **ctx)
{
	for (ssize_t i = 0; i < n; i++)
		ctx[i] = e[i].op_context;
	return n;
}

ssize_t oxs_cq_read(struct fid_cq *cq, void **ctx, size_t count)
{
	struct fi_cq_entry e[OXS_CQ_BATCH];
	if (count > OXS_CQ_BATCH)
		count = OXS_CQ_BATCH;
	ssize_t n = fi_cq_read(cq, e, count);
	return n > 0 ? copy_ctx(e, n, ctx) : n;
}

ssize_t oxs_cq_readerr(struct fid_cq *cq, void **ctx, int *err, int *prov_errno, char *msg,
		       size_t msglen)
{
	struct fi_cq_err_entry e;
	memset(&e, 0, sizeof e);
	ssize_t n = fi_cq_readerr(cq, &e, 0);
	if (n <= 0)
		return n;
	*ctx = e.op_context;
	*err = e.err;
	*prov_errno = e.prov_errno;
	if (msg && msglen) {
		const char *s = fi_cq_strerror(cq, e.prov_errno, e.err_data, NULL, 0);
		snprintf(msg, msglen, "%s (%s)", fi_strerror(e.err), s ? s : "no provider detail");
	}
	return n;
}
