! Point-to-point synchronization and ordering through shmem.fh: SHMEM_WAIT,
! SHMEM_INT4_WAIT and SHMEM_INT8_WAIT on a value the left neighbour puts;
! SHMEM_WAIT_UNTIL and SHMEM_INT4_WAIT_UNTIL with every SHMEM_CMP_
! parameter, round by round, with SHMEM_INT8_WAIT_UNTIL on the
! acknowledgements; SHMEM_FENCE (data, fence, flag) and SHMEM_QUIET
! (nonblocking put, quiet, flag): the data is there when the flag is.
program sync
  implicit none
  include 'shmem.fh'
  integer :: shmem_my_pe, shmem_n_pes
  integer, parameter :: n = 64
  integer :: me, npes, left, right, r, k
  ! Written by the left neighbour (x, x4, w, w4, w8, data, flags) or the
  ! right one (ack).
  integer, save :: x, w
  integer(kind=4), save :: x4, w4, fflag, qflag
  integer(kind=8), save :: w8, ack
  integer, save :: data(n), data2(n)
  integer :: src(n)
  ! Round r puts vals(r); the receiver's comparison holds only then.
  integer, parameter :: vals(6) = [10, 20, 30, 40, -5, -10]

  call shmem_init()
  me = shmem_my_pe()
  npes = shmem_n_pes()
  right = mod(me + 1, npes)
  left = mod(me + npes - 1, npes)
  x = 0; x4 = 0; w = 0; w4 = 0; w8 = 0; ack = 0; fflag = 0; qflag = 0
  data = -1; data2 = -1
  call shmem_barrier_all()

  ! SHMEM_WAIT family: until the variable differs from the value.
  call shmem_integer_put(w, 7, 1, right)
  call shmem_int4_set(w4, 8_4, right)
  call shmem_int8_set(w8, 9_8, right)
  call shmem_wait(w, 0)
  if (w /= 7) call fail('SHMEM_WAIT')
  call shmem_int4_wait(w4, 0_4)
  if (w4 /= 8) call fail('SHMEM_INT4_WAIT')
  call shmem_int8_wait(w8, 0_8)
  if (w8 /= 9) call fail('SHMEM_INT8_WAIT')

  ! SHMEM_WAIT_UNTIL (default INTEGER), then SHMEM_INT4_WAIT_UNTIL: each
  ! round the left neighbour puts vals(r) once this PE acknowledged round
  ! r - 1 (SHMEM_INT8_WAIT_UNTIL on ack, counting rounds over both passes).
  do r = 1, 12
    if (r > 1) call shmem_int8_wait_until(ack, SHMEM_CMP_GE, int(r - 1, 8))
    if (r <= 6) then
      call shmem_integer_put(x, vals(r), 1, right)
    else
      call shmem_int4_set(x4, int(vals(r - 6), 4), right)
    end if
    select case (r)
    case (1)
      call shmem_wait_until(x, SHMEM_CMP_EQ, 10)
    case (2)
      call shmem_wait_until(x, SHMEM_CMP_NE, 10)
    case (3)
      call shmem_wait_until(x, SHMEM_CMP_GT, 25)
    case (4)
      call shmem_wait_until(x, SHMEM_CMP_GE, 40)
    case (5)
      call shmem_wait_until(x, SHMEM_CMP_LT, 0)
    case (6)
      call shmem_wait_until(x, SHMEM_CMP_LE, -10)
    case (7)
      call shmem_int4_wait_until(x4, SHMEM_CMP_EQ, 10_4)
    case (8)
      call shmem_int4_wait_until(x4, SHMEM_CMP_NE, 10_4)
    case (9)
      call shmem_int4_wait_until(x4, SHMEM_CMP_GT, 25_4)
    case (10)
      call shmem_int4_wait_until(x4, SHMEM_CMP_GE, 40_4)
    case (11)
      call shmem_int4_wait_until(x4, SHMEM_CMP_LT, 0_4)
    case default
      call shmem_int4_wait_until(x4, SHMEM_CMP_LE, -10_4)
    end select
    if (r <= 6) then
      if (x /= vals(r)) call fail('SHMEM_WAIT_UNTIL returned before its value came')
    else
      if (x4 /= vals(r - 6)) call fail('SHMEM_INT4_WAIT_UNTIL returned before its value came')
    end if
    call shmem_int8_add(ack, 1_8, left)
  end do
  call shmem_int8_wait_until(ack, SHMEM_CMP_EQ, 12_8)

  ! SHMEM_FENCE: the data put before it arrives before the flag put after.
  do k = 1, n
    src(k) = me * 1000 + k
  end do
  call shmem_put4(data, src, n, right)
  call shmem_fence()
  call shmem_int4_set(fflag, 1_4, right)
  call shmem_int4_wait(fflag, 0_4)
  do k = 1, n
    if (data(k) /= left * 1000 + k) call fail('SHMEM_FENCE: data behind the flag')
  end do

  ! SHMEM_QUIET: a nonblocking put is complete when it returns.
  do k = 1, n
    src(k) = me * 2000 + k
  end do
  call shmem_integer_put_nbi(data2, src, n, right)
  call shmem_quiet()
  src = 0
  call shmem_int4_set(qflag, 1_4, right)
  call shmem_int4_wait_until(qflag, SHMEM_CMP_EQ, 1_4)
  do k = 1, n
    if (data2(k) /= left * 2000 + k) call fail('SHMEM_QUIET: data behind the flag')
  end do

  call shmem_barrier_all()
  print *, 'PE', me, ': OK'
  call shmem_finalize()

contains

  subroutine fail(what)
    character(len=*), intent(in) :: what
    print *, 'PE', me, ': FAILED ', what
    call shmem_global_exit(1)
  end subroutine fail
end program sync
