! Every RMA routine of shmem.fh -- SHMEM_{CHARACTER,COMPLEX,DOUBLE,INTEGER,
! LOGICAL,REAL}_{PUT,GET,PUT_NBI,GET_NBI,IPUT,IGET}, SHMEM_PUT/GET{MEM,4,8,
! 32,64,128}[_NBI], SHMEM_IPUT/IGET{MEM,4,8,32,64,128}, SHMEM_PUT, SHMEM_GET
! -- on static data (COMMON blocks and SAVE variables) and on symmetric heap
! from SHPALLOC (Cray pointers), each to the right neighbour or from it,
! with every element checked (and the elements a strided call skips).
! Then SHPCLMOVE keeps the data it moves, and SHPALLOC reports errors.
! Needs -fcray-pointer.
program rma
  implicit none
  include 'shmem.fh'
  integer :: shmem_my_pe, shmem_n_pes
  integer, parameter :: n = 8
  integer :: me, npes, left, right
  common /topo/ me, npes, left, right
  integer :: errcode, status, i

  integer :: s_int(n), d_int(n)
  common /ints/ s_int, d_int
  real :: s_real(n), d_real(n)
  common /reals/ s_real, d_real
  double precision, save :: s_dble(n), d_dble(n)
  complex, save :: s_cplx(n), d_cplx(n)
  logical, save :: s_lgcl(n), d_lgcl(n)
  character, save :: s_char(n), d_char(n)
  integer(kind=8), save :: s_int8(n), d_int8(n)
  complex(kind=8), save :: s_cpx8(n), d_cpx8(n)
  ! the same on the symmetric heap
  integer :: hs_int(n), hd_int(n)
  pointer (ps_int, hs_int)
  pointer (pd_int, hd_int)
  real :: hs_real(n), hd_real(n)
  pointer (ps_real, hs_real)
  pointer (pd_real, hd_real)
  double precision :: hs_dble(n), hd_dble(n)
  pointer (ps_dble, hs_dble)
  pointer (pd_dble, hd_dble)
  complex :: hs_cplx(n), hd_cplx(n)
  pointer (ps_cplx, hs_cplx)
  pointer (pd_cplx, hd_cplx)
  logical :: hs_lgcl(n), hd_lgcl(n)
  pointer (ps_lgcl, hs_lgcl)
  pointer (pd_lgcl, hd_lgcl)
  character :: hs_char(n), hd_char(n)
  pointer (ps_char, hs_char)
  pointer (pd_char, hd_char)
  integer(kind=8) :: hs_int8(n), hd_int8(n)
  pointer (ps_int8, hs_int8)
  pointer (pd_int8, hd_int8)
  complex(kind=8) :: hs_cpx8(n), hd_cpx8(n)
  pointer (ps_cpx8, hs_cpx8)
  pointer (pd_cpx8, hd_cpx8)
  integer :: grow(4 * n)
  pointer (pgrow, grow)
  integer(kind=8) :: pold

  call shmem_init()
  me = shmem_my_pe()
  npes = shmem_n_pes()
  right = mod(me + 1, npes)
  left = mod(me + npes - 1, npes)

  call test_int(s_int, d_int, 'static')
  call test_real(s_real, d_real, 'static')
  call test_dble(s_dble, d_dble, 'static')
  call test_cplx(s_cplx, d_cplx, 'static')
  call test_lgcl(s_lgcl, d_lgcl, 'static')
  call test_char(s_char, d_char, 'static')
  call test_int8(s_int8, d_int8, 'static')
  call test_cpx8(s_cpx8, d_cpx8, 'static')

  call shpalloc(ps_int, n, errcode, 1)
  call shpalloc(pd_int, n, errcode, 1)
  call test_int(hs_int, hd_int, 'heap')
  call shpalloc(ps_real, n, errcode, 1)
  call shpalloc(pd_real, n, errcode, 1)
  call test_real(hs_real, hd_real, 'heap')
  call shpalloc(ps_dble, 2 * n, errcode, 1)
  call shpalloc(pd_dble, 2 * n, errcode, 1)
  call test_dble(hs_dble, hd_dble, 'heap')
  call shpalloc(ps_cplx, 2 * n, errcode, 1)
  call shpalloc(pd_cplx, 2 * n, errcode, 1)
  call test_cplx(hs_cplx, hd_cplx, 'heap')
  call shpalloc(ps_lgcl, n, errcode, 1)
  call shpalloc(pd_lgcl, n, errcode, 1)
  call test_lgcl(hs_lgcl, hd_lgcl, 'heap')
  call shpalloc(ps_char, n / 4, errcode, 1)
  call shpalloc(pd_char, n / 4, errcode, 1)
  call test_char(hs_char, hd_char, 'heap')
  call shpalloc(ps_int8, 2 * n, errcode, 1)
  call shpalloc(pd_int8, 2 * n, errcode, 1)
  call test_int8(hs_int8, hd_int8, 'heap')
  call shpalloc(ps_cpx8, 4 * n, errcode, 1)
  call shpalloc(pd_cpx8, 4 * n, errcode, 1)
  call test_cpx8(hs_cpx8, hd_cpx8, 'heap')

  ! SHPCLMOVE: grow a block; its contents stay.
  call shpalloc(pgrow, n, errcode, 0)
  if (errcode /= 0) call fail('SHPALLOC errcode')
  do i = 1, n
    grow(i) = me * 100 + i
  end do
  pold = pgrow
  call shpclmove(pgrow, 4 * n, status, 0)
  if (status /= 0 .and. status /= 1) call fail('SHPCLMOVE status')
  if ((status == 0) .neqv. (pold == pgrow)) call fail('SHPCLMOVE status vs address')
  do i = 1, n
    if (grow(i) /= me * 100 + i) call fail('SHPCLMOVE lost the data')
  end do
  grow(4 * n) = 7
  call shmem_barrier_all()
  call shpdeallc(pgrow, errcode, 0)
  if (errcode /= 0) call fail('SHPDEALLC errcode')
  ! A length that is not positive: errcode -1 when abort is 0.
  call shpalloc(pgrow, 0, errcode, 0)
  if (errcode /= -1) call fail('SHPALLOC(0) errcode')

  call shpdeallc(pd_int, errcode, 1)
  call shpdeallc(ps_int, errcode, 1)
  call shpdeallc(pd_real, errcode, 1)
  call shpdeallc(ps_real, errcode, 1)
  call shpdeallc(pd_dble, errcode, 1)
  call shpdeallc(ps_dble, errcode, 1)
  call shpdeallc(pd_cplx, errcode, 1)
  call shpdeallc(ps_cplx, errcode, 1)
  call shpdeallc(pd_lgcl, errcode, 1)
  call shpdeallc(ps_lgcl, errcode, 1)
  call shpdeallc(pd_char, errcode, 1)
  call shpdeallc(ps_char, errcode, 1)
  call shpdeallc(pd_int8, errcode, 1)
  call shpdeallc(ps_int8, errcode, 1)
  call shpdeallc(pd_cpx8, errcode, 1)
  call shpdeallc(ps_cpx8, errcode, 1)
  print *, 'PE', me, ': OK'
  call shmem_finalize()
end program rma

subroutine fail(what)
  implicit none
  character(len=*), intent(in) :: what
  integer :: me, npes, left, right
  common /topo/ me, npes, left, right
  print *, 'PE', me, ': FAILED ', what
  call shmem_global_exit(1)
end subroutine fail


! integer: SHMEM_INTEGER_PUT, SHMEM_INTEGER_GET, SHMEM_INTEGER_PUT_NBI, SHMEM_INTEGER_GET_NBI, SHMEM_INTEGER_IPUT, SHMEM_INTEGER_IGET, SHMEM_PUT4, SHMEM_GET4, SHMEM_PUT4_NBI, SHMEM_GET4_NBI, SHMEM_IPUT4, SHMEM_IGET4
subroutine test_int(src, dst, where)
  implicit none
  integer, parameter :: n = 8
  integer, intent(inout) :: src(n), dst(n)
  character(len=*), intent(in) :: where
  integer :: me, npes, left, right
  common /topo/ me, npes, left, right

  call fill(left)
  call shmem_integer_put(dst, src, n, right)
  call shmem_barrier_all()
  call check('SHMEM_INTEGER_PUT', 0, left)
  call fill(right)
  call shmem_integer_get(dst, src, n, right)
  call check('SHMEM_INTEGER_GET', 0, right)
  call fill(left)
  call shmem_integer_put_nbi(dst, src, n, right)
  call shmem_quiet()
  call shmem_barrier_all()
  call check('SHMEM_INTEGER_PUT_NBI', 0, left)
  call fill(right)
  call shmem_integer_get_nbi(dst, src, n, right)
  call shmem_quiet()
  call check('SHMEM_INTEGER_GET_NBI', 0, right)
  call fill(left)
  call shmem_integer_iput(dst, src, 2, 1, n / 2, right)
  call shmem_barrier_all()
  call check('SHMEM_INTEGER_IPUT', 1, left)
  call fill(right)
  call shmem_integer_iget(dst, src, 1, 2, n / 2, right)
  call check('SHMEM_INTEGER_IGET', 2, right)
  call fill(left)
  call shmem_put4(dst, src, n, right)
  call shmem_barrier_all()
  call check('SHMEM_PUT4', 0, left)
  call fill(right)
  call shmem_get4(dst, src, n, right)
  call check('SHMEM_GET4', 0, right)
  call fill(left)
  call shmem_put4_nbi(dst, src, n, right)
  call shmem_quiet()
  call shmem_barrier_all()
  call check('SHMEM_PUT4_NBI', 0, left)
  call fill(right)
  call shmem_get4_nbi(dst, src, n, right)
  call shmem_quiet()
  call check('SHMEM_GET4_NBI', 0, right)
  call fill(left)
  call shmem_iput4(dst, src, 2, 1, n / 2, right)
  call shmem_barrier_all()
  call check('SHMEM_IPUT4', 1, left)
  call fill(right)
  call shmem_iget4(dst, src, 1, 2, n / 2, right)
  call check('SHMEM_IGET4', 2, right)

contains

  elemental function val(p, k) result(v)
    integer, intent(in) :: p, k
    integer :: v
    v = p * 100 + k
  end function val

  elemental function sent(p, k) result(v)
    integer, intent(in) :: p, k
    integer :: v
    v = -val(p, k)
  end function sent

  ! This PE's source is val(me, k); its destination holds sent(from, k)
  ! (never a value of val) for data coming from PE `from`. Every PE is
  ! ready before anyone moves data.
  subroutine fill(from)
    integer, intent(in) :: from
    integer :: k
    call shmem_barrier_all()
    do k = 1, n
      src(k) = val(me, k)
      dst(k) = sent(from, k)
    end do
    call shmem_barrier_all()
  end subroutine fill

  ! how 0: dst(k) = val(from, k) for every k; 1 (IPUT dst stride 2, source
  ! stride 1): dst(2j-1) = val(from, j), even elements untouched; 2 (IGET
  ! dst stride 1, source stride 2): dst(j) = val(from, 2j-1) for j <= n/2,
  ! the rest untouched.
  subroutine check(what, how, from)
    character(len=*), intent(in) :: what
    integer, intent(in) :: how, from
    integer :: k
    integer :: want
    do k = 1, n
      select case (how)
      case (0)
        want = val(from, k)
      case (1)
        if (mod(k, 2) == 1) then
          want = val(from, (k + 1) / 2)
        else
          want = sent(from, k)
        end if
      case default
        if (k <= n / 2) then
          want = val(from, 2 * k - 1)
        else
          want = sent(from, k)
        end if
      end select
      if (.not. (dst(k) == want)) call fail(what // ' on ' // where // ' data')
    end do
  end subroutine check
end subroutine test_int

! real: SHMEM_REAL_PUT, SHMEM_REAL_GET, SHMEM_REAL_PUT_NBI, SHMEM_REAL_GET_NBI, SHMEM_REAL_IPUT, SHMEM_REAL_IGET, SHMEM_PUT32, SHMEM_GET32, SHMEM_PUT32_NBI, SHMEM_GET32_NBI, SHMEM_IPUT32, SHMEM_IGET32
subroutine test_real(src, dst, where)
  implicit none
  integer, parameter :: n = 8
  real, intent(inout) :: src(n), dst(n)
  character(len=*), intent(in) :: where
  integer :: me, npes, left, right
  common /topo/ me, npes, left, right

  call fill(left)
  call shmem_real_put(dst, src, n, right)
  call shmem_barrier_all()
  call check('SHMEM_REAL_PUT', 0, left)
  call fill(right)
  call shmem_real_get(dst, src, n, right)
  call check('SHMEM_REAL_GET', 0, right)
  call fill(left)
  call shmem_real_put_nbi(dst, src, n, right)
  call shmem_quiet()
  call shmem_barrier_all()
  call check('SHMEM_REAL_PUT_NBI', 0, left)
  call fill(right)
  call shmem_real_get_nbi(dst, src, n, right)
  call shmem_quiet()
  call check('SHMEM_REAL_GET_NBI', 0, right)
  call fill(left)
  call shmem_real_iput(dst, src, 2, 1, n / 2, right)
  call shmem_barrier_all()
  call check('SHMEM_REAL_IPUT', 1, left)
  call fill(right)
  call shmem_real_iget(dst, src, 1, 2, n / 2, right)
  call check('SHMEM_REAL_IGET', 2, right)
  call fill(left)
  call shmem_put32(dst, src, n, right)
  call shmem_barrier_all()
  call check('SHMEM_PUT32', 0, left)
  call fill(right)
  call shmem_get32(dst, src, n, right)
  call check('SHMEM_GET32', 0, right)
  call fill(left)
  call shmem_put32_nbi(dst, src, n, right)
  call shmem_quiet()
  call shmem_barrier_all()
  call check('SHMEM_PUT32_NBI', 0, left)
  call fill(right)
  call shmem_get32_nbi(dst, src, n, right)
  call shmem_quiet()
  call check('SHMEM_GET32_NBI', 0, right)
  call fill(left)
  call shmem_iput32(dst, src, 2, 1, n / 2, right)
  call shmem_barrier_all()
  call check('SHMEM_IPUT32', 1, left)
  call fill(right)
  call shmem_iget32(dst, src, 1, 2, n / 2, right)
  call check('SHMEM_IGET32', 2, right)

contains

  elemental function val(p, k) result(v)
    integer, intent(in) :: p, k
    real :: v
    v = real(p * 100 + k)
  end function val

  elemental function sent(p, k) result(v)
    integer, intent(in) :: p, k
    real :: v
    v = -val(p, k)
  end function sent

  ! This PE's source is val(me, k); its destination holds sent(from, k)
  ! (never a value of val) for data coming from PE `from`. Every PE is
  ! ready before anyone moves data.
  subroutine fill(from)
    integer, intent(in) :: from
    integer :: k
    call shmem_barrier_all()
    do k = 1, n
      src(k) = val(me, k)
      dst(k) = sent(from, k)
    end do
    call shmem_barrier_all()
  end subroutine fill

  ! how 0: dst(k) = val(from, k) for every k; 1 (IPUT dst stride 2, source
  ! stride 1): dst(2j-1) = val(from, j), even elements untouched; 2 (IGET
  ! dst stride 1, source stride 2): dst(j) = val(from, 2j-1) for j <= n/2,
  ! the rest untouched.
  subroutine check(what, how, from)
    character(len=*), intent(in) :: what
    integer, intent(in) :: how, from
    integer :: k
    real :: want
    do k = 1, n
      select case (how)
      case (0)
        want = val(from, k)
      case (1)
        if (mod(k, 2) == 1) then
          want = val(from, (k + 1) / 2)
        else
          want = sent(from, k)
        end if
      case default
        if (k <= n / 2) then
          want = val(from, 2 * k - 1)
        else
          want = sent(from, k)
        end if
      end select
      if (.not. (dst(k) == want)) call fail(what // ' on ' // where // ' data')
    end do
  end subroutine check
end subroutine test_real

! double precision: SHMEM_DOUBLE_PUT, SHMEM_DOUBLE_GET, SHMEM_DOUBLE_PUT_NBI, SHMEM_DOUBLE_GET_NBI, SHMEM_DOUBLE_IPUT, SHMEM_DOUBLE_IGET, SHMEM_PUT64, SHMEM_GET64, SHMEM_PUT64_NBI, SHMEM_GET64_NBI, SHMEM_IPUT64, SHMEM_IGET64
subroutine test_dble(src, dst, where)
  implicit none
  integer, parameter :: n = 8
  double precision, intent(inout) :: src(n), dst(n)
  character(len=*), intent(in) :: where
  integer :: me, npes, left, right
  common /topo/ me, npes, left, right

  call fill(left)
  call shmem_double_put(dst, src, n, right)
  call shmem_barrier_all()
  call check('SHMEM_DOUBLE_PUT', 0, left)
  call fill(right)
  call shmem_double_get(dst, src, n, right)
  call check('SHMEM_DOUBLE_GET', 0, right)
  call fill(left)
  call shmem_double_put_nbi(dst, src, n, right)
  call shmem_quiet()
  call shmem_barrier_all()
  call check('SHMEM_DOUBLE_PUT_NBI', 0, left)
  call fill(right)
  call shmem_double_get_nbi(dst, src, n, right)
  call shmem_quiet()
  call check('SHMEM_DOUBLE_GET_NBI', 0, right)
  call fill(left)
  call shmem_double_iput(dst, src, 2, 1, n / 2, right)
  call shmem_barrier_all()
  call check('SHMEM_DOUBLE_IPUT', 1, left)
  call fill(right)
  call shmem_double_iget(dst, src, 1, 2, n / 2, right)
  call check('SHMEM_DOUBLE_IGET', 2, right)
  call fill(left)
  call shmem_put64(dst, src, n, right)
  call shmem_barrier_all()
  call check('SHMEM_PUT64', 0, left)
  call fill(right)
  call shmem_get64(dst, src, n, right)
  call check('SHMEM_GET64', 0, right)
  call fill(left)
  call shmem_put64_nbi(dst, src, n, right)
  call shmem_quiet()
  call shmem_barrier_all()
  call check('SHMEM_PUT64_NBI', 0, left)
  call fill(right)
  call shmem_get64_nbi(dst, src, n, right)
  call shmem_quiet()
  call check('SHMEM_GET64_NBI', 0, right)
  call fill(left)
  call shmem_iput64(dst, src, 2, 1, n / 2, right)
  call shmem_barrier_all()
  call check('SHMEM_IPUT64', 1, left)
  call fill(right)
  call shmem_iget64(dst, src, 1, 2, n / 2, right)
  call check('SHMEM_IGET64', 2, right)

contains

  elemental function val(p, k) result(v)
    integer, intent(in) :: p, k
    double precision :: v
    v = dble(p) * 1.0d6 + dble(k) / 4.0d0
  end function val

  elemental function sent(p, k) result(v)
    integer, intent(in) :: p, k
    double precision :: v
    v = -val(p, k)
  end function sent

  ! This PE's source is val(me, k); its destination holds sent(from, k)
  ! (never a value of val) for data coming from PE `from`. Every PE is
  ! ready before anyone moves data.
  subroutine fill(from)
    integer, intent(in) :: from
    integer :: k
    call shmem_barrier_all()
    do k = 1, n
      src(k) = val(me, k)
      dst(k) = sent(from, k)
    end do
    call shmem_barrier_all()
  end subroutine fill

  ! how 0: dst(k) = val(from, k) for every k; 1 (IPUT dst stride 2, source
  ! stride 1): dst(2j-1) = val(from, j), even elements untouched; 2 (IGET
  ! dst stride 1, source stride 2): dst(j) = val(from, 2j-1) for j <= n/2,
  ! the rest untouched.
  subroutine check(what, how, from)
    character(len=*), intent(in) :: what
    integer, intent(in) :: how, from
    integer :: k
    double precision :: want
    do k = 1, n
      select case (how)
      case (0)
        want = val(from, k)
      case (1)
        if (mod(k, 2) == 1) then
          want = val(from, (k + 1) / 2)
        else
          want = sent(from, k)
        end if
      case default
        if (k <= n / 2) then
          want = val(from, 2 * k - 1)
        else
          want = sent(from, k)
        end if
      end select
      if (.not. (dst(k) == want)) call fail(what // ' on ' // where // ' data')
    end do
  end subroutine check
end subroutine test_dble

! complex: SHMEM_COMPLEX_PUT, SHMEM_COMPLEX_GET, SHMEM_COMPLEX_PUT_NBI, SHMEM_COMPLEX_GET_NBI, SHMEM_COMPLEX_IPUT, SHMEM_COMPLEX_IGET
subroutine test_cplx(src, dst, where)
  implicit none
  integer, parameter :: n = 8
  complex, intent(inout) :: src(n), dst(n)
  character(len=*), intent(in) :: where
  integer :: me, npes, left, right
  common /topo/ me, npes, left, right

  call fill(left)
  call shmem_complex_put(dst, src, n, right)
  call shmem_barrier_all()
  call check('SHMEM_COMPLEX_PUT', 0, left)
  call fill(right)
  call shmem_complex_get(dst, src, n, right)
  call check('SHMEM_COMPLEX_GET', 0, right)
  call fill(left)
  call shmem_complex_put_nbi(dst, src, n, right)
  call shmem_quiet()
  call shmem_barrier_all()
  call check('SHMEM_COMPLEX_PUT_NBI', 0, left)
  call fill(right)
  call shmem_complex_get_nbi(dst, src, n, right)
  call shmem_quiet()
  call check('SHMEM_COMPLEX_GET_NBI', 0, right)
  call fill(left)
  call shmem_complex_iput(dst, src, 2, 1, n / 2, right)
  call shmem_barrier_all()
  call check('SHMEM_COMPLEX_IPUT', 1, left)
  call fill(right)
  call shmem_complex_iget(dst, src, 1, 2, n / 2, right)
  call check('SHMEM_COMPLEX_IGET', 2, right)

contains

  elemental function val(p, k) result(v)
    integer, intent(in) :: p, k
    complex :: v
    v = cmplx(real(p), real(k) + 0.5)
  end function val

  elemental function sent(p, k) result(v)
    integer, intent(in) :: p, k
    complex :: v
    v = -val(p, k)
  end function sent

  ! This PE's source is val(me, k); its destination holds sent(from, k)
  ! (never a value of val) for data coming from PE `from`. Every PE is
  ! ready before anyone moves data.
  subroutine fill(from)
    integer, intent(in) :: from
    integer :: k
    call shmem_barrier_all()
    do k = 1, n
      src(k) = val(me, k)
      dst(k) = sent(from, k)
    end do
    call shmem_barrier_all()
  end subroutine fill

  ! how 0: dst(k) = val(from, k) for every k; 1 (IPUT dst stride 2, source
  ! stride 1): dst(2j-1) = val(from, j), even elements untouched; 2 (IGET
  ! dst stride 1, source stride 2): dst(j) = val(from, 2j-1) for j <= n/2,
  ! the rest untouched.
  subroutine check(what, how, from)
    character(len=*), intent(in) :: what
    integer, intent(in) :: how, from
    integer :: k
    complex :: want
    do k = 1, n
      select case (how)
      case (0)
        want = val(from, k)
      case (1)
        if (mod(k, 2) == 1) then
          want = val(from, (k + 1) / 2)
        else
          want = sent(from, k)
        end if
      case default
        if (k <= n / 2) then
          want = val(from, 2 * k - 1)
        else
          want = sent(from, k)
        end if
      end select
      if (.not. (dst(k) == want)) call fail(what // ' on ' // where // ' data')
    end do
  end subroutine check
end subroutine test_cplx

! logical: SHMEM_LOGICAL_PUT, SHMEM_LOGICAL_GET, SHMEM_LOGICAL_PUT_NBI, SHMEM_LOGICAL_GET_NBI, SHMEM_LOGICAL_IPUT, SHMEM_LOGICAL_IGET
subroutine test_lgcl(src, dst, where)
  implicit none
  integer, parameter :: n = 8
  logical, intent(inout) :: src(n), dst(n)
  character(len=*), intent(in) :: where
  integer :: me, npes, left, right
  common /topo/ me, npes, left, right

  call fill(left)
  call shmem_logical_put(dst, src, n, right)
  call shmem_barrier_all()
  call check('SHMEM_LOGICAL_PUT', 0, left)
  call fill(right)
  call shmem_logical_get(dst, src, n, right)
  call check('SHMEM_LOGICAL_GET', 0, right)
  call fill(left)
  call shmem_logical_put_nbi(dst, src, n, right)
  call shmem_quiet()
  call shmem_barrier_all()
  call check('SHMEM_LOGICAL_PUT_NBI', 0, left)
  call fill(right)
  call shmem_logical_get_nbi(dst, src, n, right)
  call shmem_quiet()
  call check('SHMEM_LOGICAL_GET_NBI', 0, right)
  call fill(left)
  call shmem_logical_iput(dst, src, 2, 1, n / 2, right)
  call shmem_barrier_all()
  call check('SHMEM_LOGICAL_IPUT', 1, left)
  call fill(right)
  call shmem_logical_iget(dst, src, 1, 2, n / 2, right)
  call check('SHMEM_LOGICAL_IGET', 2, right)

contains

  elemental function val(p, k) result(v)
    integer, intent(in) :: p, k
    logical :: v
    v = mod(p + k, 2) == 0
  end function val

  elemental function sent(p, k) result(v)
    integer, intent(in) :: p, k
    logical :: v
    v = .not. val(p, k)
  end function sent

  ! This PE's source is val(me, k); its destination holds sent(from, k)
  ! (never a value of val) for data coming from PE `from`. Every PE is
  ! ready before anyone moves data.
  subroutine fill(from)
    integer, intent(in) :: from
    integer :: k
    call shmem_barrier_all()
    do k = 1, n
      src(k) = val(me, k)
      dst(k) = sent(from, k)
    end do
    call shmem_barrier_all()
  end subroutine fill

  ! how 0: dst(k) = val(from, k) for every k; 1 (IPUT dst stride 2, source
  ! stride 1): dst(2j-1) = val(from, j), even elements untouched; 2 (IGET
  ! dst stride 1, source stride 2): dst(j) = val(from, 2j-1) for j <= n/2,
  ! the rest untouched.
  subroutine check(what, how, from)
    character(len=*), intent(in) :: what
    integer, intent(in) :: how, from
    integer :: k
    logical :: want
    do k = 1, n
      select case (how)
      case (0)
        want = val(from, k)
      case (1)
        if (mod(k, 2) == 1) then
          want = val(from, (k + 1) / 2)
        else
          want = sent(from, k)
        end if
      case default
        if (k <= n / 2) then
          want = val(from, 2 * k - 1)
        else
          want = sent(from, k)
        end if
      end select
      if (.not. (dst(k) .eqv. want)) call fail(what // ' on ' // where // ' data')
    end do
  end subroutine check
end subroutine test_lgcl

! character: SHMEM_CHARACTER_PUT, SHMEM_CHARACTER_GET, SHMEM_CHARACTER_PUT_NBI, SHMEM_CHARACTER_GET_NBI, SHMEM_CHARACTER_IPUT, SHMEM_CHARACTER_IGET, SHMEM_PUTMEM, SHMEM_GETMEM, SHMEM_PUTMEM_NBI, SHMEM_GETMEM_NBI, SHMEM_IPUTMEM, SHMEM_IGETMEM
subroutine test_char(src, dst, where)
  implicit none
  integer, parameter :: n = 8
  character, intent(inout) :: src(n), dst(n)
  character(len=*), intent(in) :: where
  integer :: me, npes, left, right
  common /topo/ me, npes, left, right

  call fill(left)
  call shmem_character_put(dst, src, n, right)
  call shmem_barrier_all()
  call check('SHMEM_CHARACTER_PUT', 0, left)
  call fill(right)
  call shmem_character_get(dst, src, n, right)
  call check('SHMEM_CHARACTER_GET', 0, right)
  call fill(left)
  call shmem_character_put_nbi(dst, src, n, right)
  call shmem_quiet()
  call shmem_barrier_all()
  call check('SHMEM_CHARACTER_PUT_NBI', 0, left)
  call fill(right)
  call shmem_character_get_nbi(dst, src, n, right)
  call shmem_quiet()
  call check('SHMEM_CHARACTER_GET_NBI', 0, right)
  call fill(left)
  call shmem_character_iput(dst, src, 2, 1, n / 2, right)
  call shmem_barrier_all()
  call check('SHMEM_CHARACTER_IPUT', 1, left)
  call fill(right)
  call shmem_character_iget(dst, src, 1, 2, n / 2, right)
  call check('SHMEM_CHARACTER_IGET', 2, right)
  call fill(left)
  call shmem_putmem(dst, src, n, right)
  call shmem_barrier_all()
  call check('SHMEM_PUTMEM', 0, left)
  call fill(right)
  call shmem_getmem(dst, src, n, right)
  call check('SHMEM_GETMEM', 0, right)
  call fill(left)
  call shmem_putmem_nbi(dst, src, n, right)
  call shmem_quiet()
  call shmem_barrier_all()
  call check('SHMEM_PUTMEM_NBI', 0, left)
  call fill(right)
  call shmem_getmem_nbi(dst, src, n, right)
  call shmem_quiet()
  call check('SHMEM_GETMEM_NBI', 0, right)
  call fill(left)
  call shmem_iputmem(dst, src, 2, 1, n / 2, right)
  call shmem_barrier_all()
  call check('SHMEM_IPUTMEM', 1, left)
  call fill(right)
  call shmem_igetmem(dst, src, 1, 2, n / 2, right)
  call check('SHMEM_IGETMEM', 2, right)

contains

  elemental function val(p, k) result(v)
    integer, intent(in) :: p, k
    character :: v
    v = achar(65 + mod(p * 7 + k, 26))
  end function val

  elemental function sent(p, k) result(v)
    integer, intent(in) :: p, k
    character :: v
    v = achar(97 + mod(p * 7 + k, 26))
  end function sent

  ! This PE's source is val(me, k); its destination holds sent(from, k)
  ! (never a value of val) for data coming from PE `from`. Every PE is
  ! ready before anyone moves data.
  subroutine fill(from)
    integer, intent(in) :: from
    integer :: k
    call shmem_barrier_all()
    do k = 1, n
      src(k) = val(me, k)
      dst(k) = sent(from, k)
    end do
    call shmem_barrier_all()
  end subroutine fill

  ! how 0: dst(k) = val(from, k) for every k; 1 (IPUT dst stride 2, source
  ! stride 1): dst(2j-1) = val(from, j), even elements untouched; 2 (IGET
  ! dst stride 1, source stride 2): dst(j) = val(from, 2j-1) for j <= n/2,
  ! the rest untouched.
  subroutine check(what, how, from)
    character(len=*), intent(in) :: what
    integer, intent(in) :: how, from
    integer :: k
    character :: want
    do k = 1, n
      select case (how)
      case (0)
        want = val(from, k)
      case (1)
        if (mod(k, 2) == 1) then
          want = val(from, (k + 1) / 2)
        else
          want = sent(from, k)
        end if
      case default
        if (k <= n / 2) then
          want = val(from, 2 * k - 1)
        else
          want = sent(from, k)
        end if
      end select
      if (.not. (dst(k) == want)) call fail(what // ' on ' // where // ' data')
    end do
  end subroutine check
end subroutine test_char

! integer(kind=8): SHMEM_PUT8, SHMEM_GET8, SHMEM_PUT8_NBI, SHMEM_GET8_NBI, SHMEM_IPUT8, SHMEM_IGET8
subroutine test_int8(src, dst, where)
  implicit none
  integer, parameter :: n = 8
  integer(kind=8), intent(inout) :: src(n), dst(n)
  character(len=*), intent(in) :: where
  integer :: me, npes, left, right
  common /topo/ me, npes, left, right

  call fill(left)
  call shmem_put8(dst, src, n, right)
  call shmem_barrier_all()
  call check('SHMEM_PUT8', 0, left)
  call fill(right)
  call shmem_get8(dst, src, n, right)
  call check('SHMEM_GET8', 0, right)
  call fill(left)
  call shmem_put8_nbi(dst, src, n, right)
  call shmem_quiet()
  call shmem_barrier_all()
  call check('SHMEM_PUT8_NBI', 0, left)
  call fill(right)
  call shmem_get8_nbi(dst, src, n, right)
  call shmem_quiet()
  call check('SHMEM_GET8_NBI', 0, right)
  call fill(left)
  call shmem_iput8(dst, src, 2, 1, n / 2, right)
  call shmem_barrier_all()
  call check('SHMEM_IPUT8', 1, left)
  call fill(right)
  call shmem_iget8(dst, src, 1, 2, n / 2, right)
  call check('SHMEM_IGET8', 2, right)
  call fill(left)
  call shmem_put(dst, src, n, right)
  call shmem_barrier_all()
  call check('SHMEM_PUT', 0, left)
  call fill(right)
  call shmem_get(dst, src, n, right)
  call check('SHMEM_GET', 0, right)

contains

  elemental function val(p, k) result(v)
    integer, intent(in) :: p, k
    integer(kind=8) :: v
    v = int(p, 8) * 4294967296_8 + int(k, 8)
  end function val

  elemental function sent(p, k) result(v)
    integer, intent(in) :: p, k
    integer(kind=8) :: v
    v = -val(p, k)
  end function sent

  ! This PE's source is val(me, k); its destination holds sent(from, k)
  ! (never a value of val) for data coming from PE `from`. Every PE is
  ! ready before anyone moves data.
  subroutine fill(from)
    integer, intent(in) :: from
    integer :: k
    call shmem_barrier_all()
    do k = 1, n
      src(k) = val(me, k)
      dst(k) = sent(from, k)
    end do
    call shmem_barrier_all()
  end subroutine fill

  ! how 0: dst(k) = val(from, k) for every k; 1 (IPUT dst stride 2, source
  ! stride 1): dst(2j-1) = val(from, j), even elements untouched; 2 (IGET
  ! dst stride 1, source stride 2): dst(j) = val(from, 2j-1) for j <= n/2,
  ! the rest untouched.
  subroutine check(what, how, from)
    character(len=*), intent(in) :: what
    integer, intent(in) :: how, from
    integer :: k
    integer(kind=8) :: want
    do k = 1, n
      select case (how)
      case (0)
        want = val(from, k)
      case (1)
        if (mod(k, 2) == 1) then
          want = val(from, (k + 1) / 2)
        else
          want = sent(from, k)
        end if
      case default
        if (k <= n / 2) then
          want = val(from, 2 * k - 1)
        else
          want = sent(from, k)
        end if
      end select
      if (.not. (dst(k) == want)) call fail(what // ' on ' // where // ' data')
    end do
  end subroutine check
end subroutine test_int8

! complex(kind=8): SHMEM_PUT128, SHMEM_GET128, SHMEM_PUT128_NBI, SHMEM_GET128_NBI, SHMEM_IPUT128, SHMEM_IGET128
subroutine test_cpx8(src, dst, where)
  implicit none
  integer, parameter :: n = 8
  complex(kind=8), intent(inout) :: src(n), dst(n)
  character(len=*), intent(in) :: where
  integer :: me, npes, left, right
  common /topo/ me, npes, left, right

  call fill(left)
  call shmem_put128(dst, src, n, right)
  call shmem_barrier_all()
  call check('SHMEM_PUT128', 0, left)
  call fill(right)
  call shmem_get128(dst, src, n, right)
  call check('SHMEM_GET128', 0, right)
  call fill(left)
  call shmem_put128_nbi(dst, src, n, right)
  call shmem_quiet()
  call shmem_barrier_all()
  call check('SHMEM_PUT128_NBI', 0, left)
  call fill(right)
  call shmem_get128_nbi(dst, src, n, right)
  call shmem_quiet()
  call check('SHMEM_GET128_NBI', 0, right)
  call fill(left)
  call shmem_iput128(dst, src, 2, 1, n / 2, right)
  call shmem_barrier_all()
  call check('SHMEM_IPUT128', 1, left)
  call fill(right)
  call shmem_iget128(dst, src, 1, 2, n / 2, right)
  call check('SHMEM_IGET128', 2, right)

contains

  elemental function val(p, k) result(v)
    integer, intent(in) :: p, k
    complex(kind=8) :: v
    v = cmplx(dble(p) + 0.25d0, dble(k), kind=8)
  end function val

  elemental function sent(p, k) result(v)
    integer, intent(in) :: p, k
    complex(kind=8) :: v
    v = -val(p, k)
  end function sent

  ! This PE's source is val(me, k); its destination holds sent(from, k)
  ! (never a value of val) for data coming from PE `from`. Every PE is
  ! ready before anyone moves data.
  subroutine fill(from)
    integer, intent(in) :: from
    integer :: k
    call shmem_barrier_all()
    do k = 1, n
      src(k) = val(me, k)
      dst(k) = sent(from, k)
    end do
    call shmem_barrier_all()
  end subroutine fill

  ! how 0: dst(k) = val(from, k) for every k; 1 (IPUT dst stride 2, source
  ! stride 1): dst(2j-1) = val(from, j), even elements untouched; 2 (IGET
  ! dst stride 1, source stride 2): dst(j) = val(from, 2j-1) for j <= n/2,
  ! the rest untouched.
  subroutine check(what, how, from)
    character(len=*), intent(in) :: what
    integer, intent(in) :: how, from
    integer :: k
    complex(kind=8) :: want
    do k = 1, n
      select case (how)
      case (0)
        want = val(from, k)
      case (1)
        if (mod(k, 2) == 1) then
          want = val(from, (k + 1) / 2)
        else
          want = sent(from, k)
        end if
      case default
        if (k <= n / 2) then
          want = val(from, 2 * k - 1)
        else
          want = sent(from, k)
        end if
      end select
      if (.not. (dst(k) == want)) call fail(what // ' on ' // where // ' data')
    end do
  end subroutine check
end subroutine test_cpx8
