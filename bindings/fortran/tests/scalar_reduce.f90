! Reductions of scalars on SHMEM_TEAM_WORLD: sum, prod, max and min of one integer(c_int),
! integer(c_long), real(c_float) and real(c_double) per PE, through the typed names
! (shmem_int_sum_reduce, ...) and the generic ones (shmem_sum_reduce, ...); then the other
! forms the same names take: array elements, an element beside a whole array, and whole
! arrays of rank 1, 2 and 3. PE k contributes k + 1, so over n PEs the sum is n(n+1)/2, the
! product n!, the maximum n and the minimum 1.
module scalar_reduce_data
  use, intrinsic :: iso_c_binding
  implicit none
  integer(c_int) :: si = 0, ri = 0
  integer(c_long) :: sl = 0, rl = 0
  real(c_float) :: sf = 0, rf = 0
  real(c_double) :: sd = 0, rd = 0
  integer(c_int) :: ai(4) = 0, bi(4) = 0
  integer(c_long) :: m2(2, 3) = 0, r2(2, 3) = 0
  real(c_double) :: m3(2, 2, 2) = 0, r3(2, 2, 2) = 0
end module scalar_reduce_data

program scalar_reduce
  use shmem
  use scalar_reduce_data
  implicit none
  integer(c_int) :: me, np, k
  integer(c_long) :: sum_, prod_
  integer(c_size_t), parameter :: one = 1_c_size_t

  call shmem_init()
  me = shmem_my_pe()
  np = shmem_n_pes()
  sum_ = int(np, c_long) * (np + 1) / 2
  prod_ = product([(int(k, c_long), k = 1, np)])

  si = me + 1
  sl = me + 1
  sf = real(me + 1, c_float)
  sd = real(me + 1, c_double)

  ! Typed names, scalar arguments.
  call check(shmem_int_sum_reduce(shmem_team_world, ri, si, one), "int sum rc")
  if (ri /= sum_) error stop "int sum of scalars"
  call check(shmem_int_prod_reduce(shmem_team_world, ri, si, one), "int prod rc")
  if (ri /= prod_) error stop "int prod of scalars"
  call check(shmem_int_max_reduce(shmem_team_world, ri, si, one), "int max rc")
  if (ri /= np) error stop "int max of scalars"
  call check(shmem_int_min_reduce(shmem_team_world, ri, si, one), "int min rc")
  if (ri /= 1) error stop "int min of scalars"

  call check(shmem_long_sum_reduce(shmem_team_world, rl, sl, one), "long sum rc")
  if (rl /= sum_) error stop "long sum of scalars"
  call check(shmem_long_prod_reduce(shmem_team_world, rl, sl, one), "long prod rc")
  if (rl /= prod_) error stop "long prod of scalars"
  call check(shmem_long_max_reduce(shmem_team_world, rl, sl, one), "long max rc")
  if (rl /= np) error stop "long max of scalars"
  call check(shmem_long_min_reduce(shmem_team_world, rl, sl, one), "long min rc")
  if (rl /= 1) error stop "long min of scalars"

  call check(shmem_float_sum_reduce(shmem_team_world, rf, sf, one), "float sum rc")
  if (rf /= real(sum_, c_float)) error stop "float sum of scalars"
  call check(shmem_float_max_reduce(shmem_team_world, rf, sf, one), "float max rc")
  if (rf /= real(np, c_float)) error stop "float max of scalars"
  call check(shmem_double_prod_reduce(shmem_team_world, rd, sd, one), "double prod rc")
  if (rd /= real(prod_, c_double)) error stop "double prod of scalars"
  call check(shmem_double_min_reduce(shmem_team_world, rd, sd, one), "double min rc")
  if (rd /= 1.0_c_double) error stop "double min of scalars"

  ! Generic names, scalar arguments: picked by type.
  ri = 0; rl = 0; rf = 0; rd = 0
  call check(shmem_sum_reduce(shmem_team_world, ri, si, one), "generic int sum rc")
  call check(shmem_sum_reduce(shmem_team_world, rl, sl, one), "generic long sum rc")
  call check(shmem_sum_reduce(shmem_team_world, rf, sf, one), "generic float sum rc")
  call check(shmem_sum_reduce(shmem_team_world, rd, sd, one), "generic double sum rc")
  if (ri /= sum_ .or. rl /= sum_) error stop "generic integer sums of scalars"
  if (rf /= real(sum_, c_float) .or. rd /= real(sum_, c_double)) error stop "generic real sums of scalars"
  call check(shmem_prod_reduce(shmem_team_world, rl, sl, one), "generic long prod rc")
  if (rl /= prod_) error stop "generic long prod of scalars"
  call check(shmem_max_reduce(shmem_team_world, rd, sd, one), "generic double max rc")
  if (rd /= real(np, c_double)) error stop "generic double max of scalars"
  call check(shmem_min_reduce(shmem_team_world, rf, sf, one), "generic float min rc")
  if (rf /= 1.0_c_float) error stop "generic float min of scalars"

  ! Array elements, an element beside a whole array, and whole arrays.
  ai = [(me + k, k = 1, 4)]
  call check(shmem_int_max_reduce(shmem_team_world, bi(2), ai(2), 2_c_size_t), "elements rc")
  if (any(bi(2:3) /= [np + 1, np + 2]) .or. bi(1) /= 0 .or. bi(4) /= 0) error stop "max of elements"
  bi = 0
  call check(shmem_int_sum_reduce(shmem_team_world, bi(1), ai, 4_c_size_t), "element and array rc")
  if (any(bi /= [(sum_ + np * (k - 1), k = 1, 4)])) error stop "sum into an element"
  bi = 0
  call check(shmem_int_sum_reduce(shmem_team_world, bi, ai(1), 4_c_size_t), "array and element rc")
  if (any(bi /= [(sum_ + np * (k - 1), k = 1, 4)])) error stop "sum from an element"
  bi = 0
  call check(shmem_sum_reduce(shmem_team_world, bi, ai, 4_c_size_t), "rank 1 rc")
  if (any(bi /= [(sum_ + np * (k - 1), k = 1, 4)])) error stop "sum of rank-1 arrays"
  m2 = reshape([(int(me, c_long) * k, k = 1, 6)], [2, 3])
  call check(shmem_long_sum_reduce(shmem_team_world, r2, m2, 6_c_size_t), "rank 2 rc")
  if (any(r2 /= reshape([(int(np - 1, c_long) * np / 2 * k, k = 1, 6)], [2, 3]))) &
    error stop "sum of rank-2 arrays"
  m3 = real(me + 1, c_double)
  call check(shmem_min_reduce(shmem_team_world, r3, m3, 8_c_size_t), "rank 3 rc")
  if (any(r3 /= 1.0_c_double)) error stop "min of rank-3 arrays"

  call shmem_barrier_all()
  if (me == 0) print "(a, i0, a)", "scalar_reduce: ok on ", np, " PEs"
  call shmem_finalize()

contains

  subroutine check(rc, what)
    integer(c_int), intent(in) :: rc
    character(*), intent(in) :: what
    if (rc /= 0) then
      print *, what, rc
      error stop "a reduction returned non-zero"
    end if
  end subroutine check

end program scalar_reduce
