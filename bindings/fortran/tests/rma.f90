! Puts and gets of every type the module has, into memory from shmem_malloc and into module
! variables (static data is symmetric too): each PE writes its right neighbour's objects and
! reads its left neighbour's, with put/get, p/g, the _nbi forms, iput/iget and putmem/getmem.
module rma_data
  use, intrinsic :: iso_c_binding
  implicit none
  integer, parameter :: n = 8
  integer(c_int) :: si(n)
  integer(c_long) :: sl(n)
  real(c_float) :: sf(n)
  real(c_double), target :: sd(n)
end module rma_data

program rma
  use shmem
  use rma_data
  implicit none
  integer(c_int) :: me, np, right, left, k
  integer(c_int), pointer :: hi(:)
  integer(c_long), pointer :: hl(:)
  real(c_float), pointer :: hf(:)
  real(c_double), pointer :: hd(:)
  integer(c_int) :: li(n), strided(2 * n)
  integer(c_long) :: ll(n)
  real(c_float) :: lf(n)
  real(c_double), target :: ld(n)
  type(c_ptr) :: p
  integer(c_size_t), parameter :: nn = int(n, c_size_t)

  call shmem_init()
  me = shmem_my_pe()
  np = shmem_n_pes()
  right = modulo(me + 1, np)
  left = modulo(me - 1, np)

  p = shmem_malloc(nn * 4)
  call c_f_pointer(p, hi, [n])
  p = shmem_malloc(nn * 8)
  call c_f_pointer(p, hl, [n])
  p = shmem_malloc(nn * 4)
  call c_f_pointer(p, hf, [n])
  p = shmem_malloc(nn * 8)
  call c_f_pointer(p, hd, [n])
  if (.not. (associated(hi) .and. associated(hl) .and. associated(hf) .and. associated(hd))) &
    error stop "shmem_malloc returned NULL"

  ! Blocking put into the right neighbour: heap with the typed names, statics with the generics.
  do k = 1, n
    li(k) = 1000 * me + k
    ll(k) = 100000000000_c_long * me + k
    lf(k) = real(me, c_float) + 0.25_c_float * k
    ld(k) = real(me, c_double) + 0.125_c_double * k
  end do
  call shmem_int_put(hi, li, nn, right)
  call shmem_long_put(hl, ll, nn, right)
  call shmem_float_put(hf, lf, nn, right)
  call shmem_double_put(hd, ld, nn, right)
  call shmem_put(si, li, nn, right)
  call shmem_put(sl, ll, nn, right)
  call shmem_put(sf, lf, nn, right)
  call shmem_put(sd, ld, nn, right)
  call shmem_barrier_all()
  do k = 1, n
    if (hi(k) /= 1000 * left + k .or. si(k) /= hi(k)) error stop "int put"
    if (hl(k) /= 100000000000_c_long * left + k .or. sl(k) /= hl(k)) error stop "long put"
    if (hf(k) /= real(left, c_float) + 0.25_c_float * k .or. sf(k) /= hf(k)) error stop "float put"
    if (hd(k) /= real(left, c_double) + 0.125_c_double * k .or. sd(k) /= hd(k)) error stop "double put"
  end do
  call shmem_barrier_all()

  ! Gets from the left neighbour, whose objects hold what its own left neighbour put.
  call shmem_int_get(li, hi, nn, left)
  call shmem_get(ll, sl, nn, left)
  call shmem_float_get(lf, hf, nn, left)
  call shmem_get(ld, sd, nn, left)
  do k = 1, n
    if (li(k) /= 1000 * modulo(left - 1, np) + k) error stop "int get"
    if (ll(k) /= 100000000000_c_long * modulo(left - 1, np) + k) error stop "long get"
    if (lf(k) /= real(modulo(left - 1, np), c_float) + 0.25_c_float * k) error stop "float get"
    if (ld(k) /= real(modulo(left - 1, np), c_double) + 0.125_c_double * k) error stop "double get"
  end do
  call shmem_barrier_all()

  ! Single elements.
  call shmem_int_p(hi(1), -me, right)
  call shmem_p(hl(2), -10_c_long * me, right)
  call shmem_float_p(hf(3), 1.5_c_float * me, right)
  call shmem_double_p(sd(4), 2.5_c_double * me, right)
  call shmem_barrier_all()
  if (hi(1) /= -left .or. hl(2) /= -10_c_long * left) error stop "int/long p"
  if (hf(3) /= 1.5_c_float * left .or. sd(4) /= 2.5_c_double * left) error stop "float/double p"
  if (shmem_int_g(hi(1), left) /= -modulo(left - 1, np)) error stop "int g"
  if (shmem_g(hl(2), left) /= -10_c_long * modulo(left - 1, np)) error stop "long g"
  if (shmem_float_g(hf(3), left) /= 1.5_c_float * modulo(left - 1, np)) error stop "float g"
  if (shmem_g(sd(4), left) /= 2.5_c_double * modulo(left - 1, np)) error stop "double g"
  call shmem_barrier_all()

  ! Non-blocking forms, completed by quiet.
  li = 7 * me
  call shmem_int_put_nbi(hi, li, nn, right)
  call shmem_put_nbi(sd, [(real(k + me, c_double), k = 1, n)], nn, right)
  call shmem_quiet()
  call shmem_barrier_all()
  if (any(hi /= 7 * left)) error stop "int put_nbi"
  do k = 1, n
    if (sd(k) /= real(k + left, c_double)) error stop "double put_nbi"
  end do
  call shmem_long_get_nbi(ll, hl, nn, right)
  call shmem_quiet()
  if (ll(2) /= -10_c_long * me) error stop "long get_nbi"
  call shmem_barrier_all()

  ! Strided: every other element of a local array into the right neighbour's heap array.
  strided = [(100 * me + k, k = 1, 2 * n)]
  call shmem_int_iput(hi, strided, 1_c_ptrdiff_t, 2_c_ptrdiff_t, nn, right)
  call shmem_barrier_all()
  do k = 1, n
    if (hi(k) /= 100 * left + 2 * k - 1) error stop "int iput"
  end do
  strided = 0
  call shmem_iget(strided, hi, 2_c_ptrdiff_t, 1_c_ptrdiff_t, nn, left)
  do k = 1, n
    if (strided(2 * k - 1) /= 100 * modulo(left - 1, np) + 2 * k - 1 .or. strided(2 * k) /= 0) &
      error stop "int iget"
  end do
  call shmem_barrier_all()

  ! Bytes between addresses.
  ld = -1.0_c_double * me
  call shmem_putmem(c_loc(sd), c_loc(ld), nn * 8, right)
  call shmem_barrier_all()
  if (any(sd /= -1.0_c_double * left)) error stop "putmem"
  ld = 0
  call shmem_getmem(c_loc(ld), c_loc(sd), nn * 8, right)
  if (any(ld /= -1.0_c_double * me)) error stop "getmem"
  call shmem_barrier_all()

  call shmem_free(c_loc(hd))
  call shmem_free(c_loc(hf))
  call shmem_free(c_loc(hl))
  call shmem_free(c_loc(hi))
  if (me == 0) print '(a, i0, a)', "rma: ok on ", np, " PEs"
  call shmem_finalize()
end program rma
