! Point-to-point synchronization and collectives on SHMEM_TEAM_WORLD: a token passed around
! the ring with wait_until (integer(c_int), then integer(c_long), with each SHMEM_CMP_*
! comparison), test, fence-ordered flags, broadcast of every type, sum (and prod, max, min)
! reductions of every type, fcollect, collect and alltoall.
module coll_data
  use, intrinsic :: iso_c_binding
  implicit none
  integer, parameter :: n = 5
  integer(c_int) :: flag = 0, data_i = 0
  integer(c_long) :: lflag = 0
  integer(c_int) :: bi(n), ri(n), si(n)
  integer(c_long) :: bl(n), rl(n), sl(n)
  real(c_float) :: bf(n), rf(n), sf(n)
  real(c_double) :: bd(n), rd(n), sd(n)
  integer(c_int) :: gather(64), a2a_src(64), a2a_dst(64)
end module coll_data

program coll
  use shmem
  use coll_data
  implicit none
  integer(c_int) :: me, np, right, left, k, root, rc, j
  integer(c_long) :: expect_l
  integer(c_size_t), parameter :: nn = int(n, c_size_t)

  call shmem_init()
  me = shmem_my_pe()
  np = shmem_n_pes()
  right = modulo(me + 1, np)
  left = modulo(me - 1, np)
  if (shmem_team_my_pe(shmem_team_world) /= me) error stop "team_my_pe of SHMEM_TEAM_WORLD"
  if (shmem_team_n_pes(shmem_team_world) /= np) error stop "team_n_pes of SHMEM_TEAM_WORLD"

  ! Ring: PE 0 starts; each PE waits for its token, then passes it on. The data travels ahead
  ! of the flag, ordered by fence.
  if (me /= 0) then
    call shmem_int_wait_until(flag, SHMEM_CMP_EQ, 1_c_int)
    if (data_i /= 100 + left) error stop "wait_until: data did not arrive before the flag"
  end if
  if (np > 1 .and. (me /= np - 1)) then
    call shmem_int_p(data_i, 100 + me, right)
    call shmem_fence()
    call shmem_int_p(flag, 1_c_int, right)
  end if
  call shmem_barrier_all()

  ! Now with integer(c_long) and the other comparisons: PE 0 raises every other PE's lflag
  ! to 5 in steps, and each waiter checks NE, GT, GE, LT and LE against it.
  if (me == 0) then
    do k = 1, np - 1
      call shmem_long_atomic_set(lflag, 2_c_long, k)
    end do
    call shmem_sync_all()
    do k = 1, np - 1
      call shmem_long_atomic_add(lflag, 3_c_long, k)
    end do
  else
    call shmem_long_wait_until(lflag, SHMEM_CMP_NE, 0_c_long)
    call shmem_wait_until(lflag, SHMEM_CMP_GE, 2_c_long)
    call shmem_wait_until(lflag, SHMEM_CMP_LE, 2_c_long)
    call shmem_sync_all()
    call shmem_wait_until(lflag, SHMEM_CMP_GT, 4_c_long)
    if (lflag /= 5) error stop "wait_until GT returned before the add"
    call shmem_wait_until(lflag, SHMEM_CMP_LT, 6_c_long)
    if (shmem_long_test(lflag, SHMEM_CMP_EQ, 5_c_long) /= 1) error stop "test EQ 5"
    if (shmem_test(lflag, SHMEM_CMP_NE, 5_c_long) /= 0) error stop "test NE 5"
  end if
  call shmem_barrier_all()
  if (shmem_int_test(flag, SHMEM_CMP_EQ, merge(0_c_int, 1_c_int, me == 0)) /= 1) &
    error stop "int test"

  ! Broadcast of every type from the last PE.
  root = np - 1
  do k = 1, n
    si(k) = merge(7 * k, -1, me == root)
    sl(k) = merge(70000000000_c_long * k, -1_c_long, me == root)
    sf(k) = merge(0.5_c_float * k, -1.0_c_float, me == root)
    sd(k) = merge(0.25_c_double * k, -1.0_c_double, me == root)
  end do
  bi = 0
  bl = 0
  bf = 0
  bd = 0
  rc = shmem_int_broadcast(shmem_team_world, bi, si, nn, root)
  if (rc /= 0) error stop "int broadcast failed"
  rc = shmem_broadcast(shmem_team_world, bl, sl, nn, root)
  if (rc /= 0) error stop "long broadcast failed"
  rc = shmem_float_broadcast(shmem_team_world, bf, sf, nn, root)
  if (rc /= 0) error stop "float broadcast failed"
  rc = shmem_broadcast(shmem_team_world, bd, sd, nn, root)
  if (rc /= 0) error stop "double broadcast failed"
  do k = 1, n
    if (bi(k) /= 7 * k) error stop "int broadcast"
    if (bl(k) /= 70000000000_c_long * k) error stop "long broadcast"
    if (bf(k) /= 0.5_c_float * k) error stop "float broadcast"
    if (bd(k) /= 0.25_c_double * k) error stop "double broadcast"
  end do

  ! Sum reductions of every type: element k of PE p is p + k (exact in floating point).
  do k = 1, n
    si(k) = me + k
    sl(k) = 10000000000_c_long * (me + k)
    sf(k) = real(me + k, c_float)
    sd(k) = real(me + k, c_double) + 0.5_c_double
  end do
  rc = shmem_int_sum_reduce(shmem_team_world, ri, si, nn)
  if (rc /= 0) error stop "int sum_reduce failed"
  rc = shmem_sum_reduce(shmem_team_world, rl, sl, nn)
  if (rc /= 0) error stop "long sum_reduce failed"
  rc = shmem_float_sum_reduce(shmem_team_world, rf, sf, nn)
  if (rc /= 0) error stop "float sum_reduce failed"
  rc = shmem_sum_reduce(shmem_team_world, rd, sd, nn)
  if (rc /= 0) error stop "double sum_reduce failed"
  do k = 1, n
    expect_l = np * (np - 1) / 2 + np * k
    if (ri(k) /= expect_l) error stop "int sum_reduce"
    if (rl(k) /= 10000000000_c_long * expect_l) error stop "long sum_reduce"
    if (rf(k) /= real(expect_l, c_float)) error stop "float sum_reduce"
    if (rd(k) /= real(expect_l, c_double) + 0.5_c_double * np) error stop "double sum_reduce"
  end do

  ! max, min, prod.
  rc = shmem_max_reduce(shmem_team_world, ri, si, nn)
  if (rc /= 0 .or. any(ri /= [(np - 1 + k, k = 1, n)])) error stop "int max_reduce"
  rc = shmem_min_reduce(shmem_team_world, rd, sd, nn)
  if (rc /= 0 .or. any(rd /= [(real(k, c_double) + 0.5_c_double, k = 1, n)])) error stop "double min_reduce"
  sl = 2
  rc = shmem_long_prod_reduce(shmem_team_world, rl, sl, nn)
  if (rc /= 0 .or. any(rl /= 2_c_long**np)) error stop "long prod_reduce"

  ! fcollect (each PE gives 2), collect (PE p gives p + 1 elements), alltoall (1 to each).
  si(1:2) = [10 * me, 10 * me + 1]
  rc = shmem_fcollect(shmem_team_world, gather, si, 2_c_size_t)
  if (rc /= 0) error stop "fcollect failed"
  do k = 0, np - 1
    if (gather(2 * k + 1) /= 10 * k .or. gather(2 * k + 2) /= 10 * k + 1) error stop "fcollect"
  end do
  si = me
  gather = -1
  rc = shmem_int_collect(shmem_team_world, gather, si, int(me + 1, c_size_t))
  if (rc /= 0) error stop "collect failed"
  j = 0
  do k = 0, np - 1
    if (any(gather(j + 1:j + k + 1) /= k)) error stop "collect"
    j = j + k + 1
  end do
  do k = 0, np - 1
    a2a_src(k + 1) = 100 * me + k
  end do
  rc = shmem_alltoall(shmem_team_world, a2a_dst, a2a_src, 1_c_size_t)
  if (rc /= 0) error stop "alltoall failed"
  do k = 0, np - 1
    if (a2a_dst(k + 1) /= 100 * k + me) error stop "alltoall"
  end do
  if (shmem_team_sync(shmem_team_world) /= 0) error stop "team_sync"

  if (me == 0) print '(a, i0, a)', "coll: ok on ", np, " PEs"
  call shmem_finalize()
end program coll
