! Every reduction of shmem.fh: SHMEM_INT4/INT8_{AND,OR,XOR}_TO_ALL,
! SHMEM_INT4/INT8/REAL4/REAL8_{MAX,MIN}_TO_ALL and
! SHMEM_INT4/INT8/REAL4/REAL8/COMP4/COMP8_{SUM,PROD}_TO_ALL, with pWrk and
! pSync arrays as the specification sizes them, over every PE and then over
! two disjoint active sets with logPE_stride 1 (the even PEs, the odd PEs).
! Every element of every result is checked against the same reduction done
! here (exact: the values are small integers or binary fractions).
program reduce
  implicit none
  include 'shmem.fh'
  integer :: shmem_my_pe, shmem_n_pes
  integer, parameter :: n = 6
  integer :: me, npes

  integer(kind=4), save :: src_i4(n), dst_i4(n), pwrk_i4(max(n / 2 + 1, SHMEM_REDUCE_MIN_WRKDATA_SIZE))
  integer(kind=8), save :: src_i8(n), dst_i8(n), pwrk_i8(max(n / 2 + 1, SHMEM_REDUCE_MIN_WRKDATA_SIZE))
  real(kind=4), save :: src_r4(n), dst_r4(n), pwrk_r4(max(n / 2 + 1, SHMEM_REDUCE_MIN_WRKDATA_SIZE))
  real(kind=8), save :: src_r8(n), dst_r8(n), pwrk_r8(max(n / 2 + 1, SHMEM_REDUCE_MIN_WRKDATA_SIZE))
  complex(kind=4), save :: src_c4(n), dst_c4(n), pwrk_c4(max(n / 2 + 1, SHMEM_REDUCE_MIN_WRKDATA_SIZE))
  complex(kind=8), save :: src_c8(n), dst_c8(n), pwrk_c8(max(n / 2 + 1, SHMEM_REDUCE_MIN_WRKDATA_SIZE))
  integer, save :: psync(SHMEM_REDUCE_SYNC_SIZE)

  call shmem_init()
  me = shmem_my_pe()
  npes = shmem_n_pes()
  psync = SHMEM_SYNC_VALUE
  call shmem_barrier_all()
  ! Every PE.
  call all_reductions(0, 0, npes)
  ! The even PEs and the odd PEs, at the same time.
  if (mod(me, 2) == 0) then
    call all_reductions(0, 1, (npes + 1) / 2)
  else
    call all_reductions(1, 1, npes / 2)
  end if
  call shmem_barrier_all()
  print *, 'PE', me, ': OK'
  call shmem_finalize()

contains

  subroutine fail(what, start, logstride, size)
    character(len=*), intent(in) :: what
    integer, intent(in) :: start, logstride, size
    print *, 'PE', me, ': FAILED ', what, ' on the active set', start, logstride, size
    call shmem_global_exit(1)
  end subroutine fail

  ! One call of every reduction over the set (start, logstride, size),
  ! which this PE is in.
  subroutine all_reductions(start, logstride, size)
    integer, intent(in) :: start, logstride, size
    integer :: k, i, m
    integer(kind=4) :: acc_i4, x_i4
    integer(kind=8) :: acc_i8, x_i8
    real(kind=4) :: acc_r4, x_r4
    real(kind=8) :: acc_r8, x_r8
    complex(kind=4) :: acc_c4, x_c4
    complex(kind=8) :: acc_c8, x_c8
    ! SHMEM_INT4_AND_TO_ALL
    do k = 1, n
      m = me
      src_i4(k) = int(ishft(1, mod(m + k, 20)) + ishft(1, mod(3 * m + k, 25)) + m * k, 4)
      dst_i4(k) = -src_i4(k)
    end do
    call shmem_barrier_all()
    call shmem_int4_and_to_all(dst_i4, src_i4, n, start, logstride, size, pwrk_i4, psync)
    do k = 1, n
      do i = 0, size - 1
        m = start + i * 2**logstride
        x_i4 = int(ishft(1, mod(m + k, 20)) + ishft(1, mod(3 * m + k, 25)) + m * k, 4)
        if (i == 0) then
          acc_i4 = x_i4
        else
          acc_i4 = iand(acc_i4, x_i4)
        end if
      end do
      if (dst_i4(k) /= acc_i4) call fail('SHMEM_INT4_AND_TO_ALL', start, logstride, size)
    end do
    ! SHMEM_INT8_AND_TO_ALL
    do k = 1, n
      m = me
      src_i8(k) = ishft(1_8, mod(m + k, 60)) + ishft(1_8, mod(5 * m + k, 45)) + int(m * k, 8)
      dst_i8(k) = -src_i8(k)
    end do
    call shmem_barrier_all()
    call shmem_int8_and_to_all(dst_i8, src_i8, n, start, logstride, size, pwrk_i8, psync)
    do k = 1, n
      do i = 0, size - 1
        m = start + i * 2**logstride
        x_i8 = ishft(1_8, mod(m + k, 60)) + ishft(1_8, mod(5 * m + k, 45)) + int(m * k, 8)
        if (i == 0) then
          acc_i8 = x_i8
        else
          acc_i8 = iand(acc_i8, x_i8)
        end if
      end do
      if (dst_i8(k) /= acc_i8) call fail('SHMEM_INT8_AND_TO_ALL', start, logstride, size)
    end do
    ! SHMEM_INT4_OR_TO_ALL
    do k = 1, n
      m = me
      src_i4(k) = int(ishft(1, mod(m + k, 20)) + ishft(1, mod(3 * m + k, 25)) + m * k, 4)
      dst_i4(k) = -src_i4(k)
    end do
    call shmem_barrier_all()
    call shmem_int4_or_to_all(dst_i4, src_i4, n, start, logstride, size, pwrk_i4, psync)
    do k = 1, n
      do i = 0, size - 1
        m = start + i * 2**logstride
        x_i4 = int(ishft(1, mod(m + k, 20)) + ishft(1, mod(3 * m + k, 25)) + m * k, 4)
        if (i == 0) then
          acc_i4 = x_i4
        else
          acc_i4 = ior(acc_i4, x_i4)
        end if
      end do
      if (dst_i4(k) /= acc_i4) call fail('SHMEM_INT4_OR_TO_ALL', start, logstride, size)
    end do
    ! SHMEM_INT8_OR_TO_ALL
    do k = 1, n
      m = me
      src_i8(k) = ishft(1_8, mod(m + k, 60)) + ishft(1_8, mod(5 * m + k, 45)) + int(m * k, 8)
      dst_i8(k) = -src_i8(k)
    end do
    call shmem_barrier_all()
    call shmem_int8_or_to_all(dst_i8, src_i8, n, start, logstride, size, pwrk_i8, psync)
    do k = 1, n
      do i = 0, size - 1
        m = start + i * 2**logstride
        x_i8 = ishft(1_8, mod(m + k, 60)) + ishft(1_8, mod(5 * m + k, 45)) + int(m * k, 8)
        if (i == 0) then
          acc_i8 = x_i8
        else
          acc_i8 = ior(acc_i8, x_i8)
        end if
      end do
      if (dst_i8(k) /= acc_i8) call fail('SHMEM_INT8_OR_TO_ALL', start, logstride, size)
    end do
    ! SHMEM_INT4_XOR_TO_ALL
    do k = 1, n
      m = me
      src_i4(k) = int(ishft(1, mod(m + k, 20)) + ishft(1, mod(3 * m + k, 25)) + m * k, 4)
      dst_i4(k) = -src_i4(k)
    end do
    call shmem_barrier_all()
    call shmem_int4_xor_to_all(dst_i4, src_i4, n, start, logstride, size, pwrk_i4, psync)
    do k = 1, n
      do i = 0, size - 1
        m = start + i * 2**logstride
        x_i4 = int(ishft(1, mod(m + k, 20)) + ishft(1, mod(3 * m + k, 25)) + m * k, 4)
        if (i == 0) then
          acc_i4 = x_i4
        else
          acc_i4 = ieor(acc_i4, x_i4)
        end if
      end do
      if (dst_i4(k) /= acc_i4) call fail('SHMEM_INT4_XOR_TO_ALL', start, logstride, size)
    end do
    ! SHMEM_INT8_XOR_TO_ALL
    do k = 1, n
      m = me
      src_i8(k) = ishft(1_8, mod(m + k, 60)) + ishft(1_8, mod(5 * m + k, 45)) + int(m * k, 8)
      dst_i8(k) = -src_i8(k)
    end do
    call shmem_barrier_all()
    call shmem_int8_xor_to_all(dst_i8, src_i8, n, start, logstride, size, pwrk_i8, psync)
    do k = 1, n
      do i = 0, size - 1
        m = start + i * 2**logstride
        x_i8 = ishft(1_8, mod(m + k, 60)) + ishft(1_8, mod(5 * m + k, 45)) + int(m * k, 8)
        if (i == 0) then
          acc_i8 = x_i8
        else
          acc_i8 = ieor(acc_i8, x_i8)
        end if
      end do
      if (dst_i8(k) /= acc_i8) call fail('SHMEM_INT8_XOR_TO_ALL', start, logstride, size)
    end do
    ! SHMEM_INT4_MAX_TO_ALL
    do k = 1, n
      m = me
      src_i4(k) = int(mod(m * 7 + k * 3, 11) - 5, 4)
      dst_i4(k) = -src_i4(k)
    end do
    call shmem_barrier_all()
    call shmem_int4_max_to_all(dst_i4, src_i4, n, start, logstride, size, pwrk_i4, psync)
    do k = 1, n
      do i = 0, size - 1
        m = start + i * 2**logstride
        x_i4 = int(mod(m * 7 + k * 3, 11) - 5, 4)
        if (i == 0) then
          acc_i4 = x_i4
        else
          acc_i4 = max(acc_i4, x_i4)
        end if
      end do
      if (dst_i4(k) /= acc_i4) call fail('SHMEM_INT4_MAX_TO_ALL', start, logstride, size)
    end do
    ! SHMEM_INT8_MAX_TO_ALL
    do k = 1, n
      m = me
      src_i8(k) = int(mod(m * 7 + k * 3, 11) - 5, 8) * 10000000000_8
      dst_i8(k) = -src_i8(k)
    end do
    call shmem_barrier_all()
    call shmem_int8_max_to_all(dst_i8, src_i8, n, start, logstride, size, pwrk_i8, psync)
    do k = 1, n
      do i = 0, size - 1
        m = start + i * 2**logstride
        x_i8 = int(mod(m * 7 + k * 3, 11) - 5, 8) * 10000000000_8
        if (i == 0) then
          acc_i8 = x_i8
        else
          acc_i8 = max(acc_i8, x_i8)
        end if
      end do
      if (dst_i8(k) /= acc_i8) call fail('SHMEM_INT8_MAX_TO_ALL', start, logstride, size)
    end do
    ! SHMEM_REAL4_MAX_TO_ALL
    do k = 1, n
      m = me
      src_r4(k) = real(mod(m * 7 + k * 3, 11) - 5, 4) + 0.5
      dst_r4(k) = -src_r4(k)
    end do
    call shmem_barrier_all()
    call shmem_real4_max_to_all(dst_r4, src_r4, n, start, logstride, size, pwrk_r4, psync)
    do k = 1, n
      do i = 0, size - 1
        m = start + i * 2**logstride
        x_r4 = real(mod(m * 7 + k * 3, 11) - 5, 4) + 0.5
        if (i == 0) then
          acc_r4 = x_r4
        else
          acc_r4 = max(acc_r4, x_r4)
        end if
      end do
      if (dst_r4(k) /= acc_r4) call fail('SHMEM_REAL4_MAX_TO_ALL', start, logstride, size)
    end do
    ! SHMEM_REAL8_MAX_TO_ALL
    do k = 1, n
      m = me
      src_r8(k) = real(mod(m * 7 + k * 3, 11) - 5, 8) + 0.25d0
      dst_r8(k) = -src_r8(k)
    end do
    call shmem_barrier_all()
    call shmem_real8_max_to_all(dst_r8, src_r8, n, start, logstride, size, pwrk_r8, psync)
    do k = 1, n
      do i = 0, size - 1
        m = start + i * 2**logstride
        x_r8 = real(mod(m * 7 + k * 3, 11) - 5, 8) + 0.25d0
        if (i == 0) then
          acc_r8 = x_r8
        else
          acc_r8 = max(acc_r8, x_r8)
        end if
      end do
      if (dst_r8(k) /= acc_r8) call fail('SHMEM_REAL8_MAX_TO_ALL', start, logstride, size)
    end do
    ! SHMEM_INT4_MIN_TO_ALL
    do k = 1, n
      m = me
      src_i4(k) = int(mod(m * 7 + k * 3, 11) - 5, 4)
      dst_i4(k) = -src_i4(k)
    end do
    call shmem_barrier_all()
    call shmem_int4_min_to_all(dst_i4, src_i4, n, start, logstride, size, pwrk_i4, psync)
    do k = 1, n
      do i = 0, size - 1
        m = start + i * 2**logstride
        x_i4 = int(mod(m * 7 + k * 3, 11) - 5, 4)
        if (i == 0) then
          acc_i4 = x_i4
        else
          acc_i4 = min(acc_i4, x_i4)
        end if
      end do
      if (dst_i4(k) /= acc_i4) call fail('SHMEM_INT4_MIN_TO_ALL', start, logstride, size)
    end do
    ! SHMEM_INT8_MIN_TO_ALL
    do k = 1, n
      m = me
      src_i8(k) = int(mod(m * 7 + k * 3, 11) - 5, 8) * 10000000000_8
      dst_i8(k) = -src_i8(k)
    end do
    call shmem_barrier_all()
    call shmem_int8_min_to_all(dst_i8, src_i8, n, start, logstride, size, pwrk_i8, psync)
    do k = 1, n
      do i = 0, size - 1
        m = start + i * 2**logstride
        x_i8 = int(mod(m * 7 + k * 3, 11) - 5, 8) * 10000000000_8
        if (i == 0) then
          acc_i8 = x_i8
        else
          acc_i8 = min(acc_i8, x_i8)
        end if
      end do
      if (dst_i8(k) /= acc_i8) call fail('SHMEM_INT8_MIN_TO_ALL', start, logstride, size)
    end do
    ! SHMEM_REAL4_MIN_TO_ALL
    do k = 1, n
      m = me
      src_r4(k) = real(mod(m * 7 + k * 3, 11) - 5, 4) + 0.5
      dst_r4(k) = -src_r4(k)
    end do
    call shmem_barrier_all()
    call shmem_real4_min_to_all(dst_r4, src_r4, n, start, logstride, size, pwrk_r4, psync)
    do k = 1, n
      do i = 0, size - 1
        m = start + i * 2**logstride
        x_r4 = real(mod(m * 7 + k * 3, 11) - 5, 4) + 0.5
        if (i == 0) then
          acc_r4 = x_r4
        else
          acc_r4 = min(acc_r4, x_r4)
        end if
      end do
      if (dst_r4(k) /= acc_r4) call fail('SHMEM_REAL4_MIN_TO_ALL', start, logstride, size)
    end do
    ! SHMEM_REAL8_MIN_TO_ALL
    do k = 1, n
      m = me
      src_r8(k) = real(mod(m * 7 + k * 3, 11) - 5, 8) + 0.25d0
      dst_r8(k) = -src_r8(k)
    end do
    call shmem_barrier_all()
    call shmem_real8_min_to_all(dst_r8, src_r8, n, start, logstride, size, pwrk_r8, psync)
    do k = 1, n
      do i = 0, size - 1
        m = start + i * 2**logstride
        x_r8 = real(mod(m * 7 + k * 3, 11) - 5, 8) + 0.25d0
        if (i == 0) then
          acc_r8 = x_r8
        else
          acc_r8 = min(acc_r8, x_r8)
        end if
      end do
      if (dst_r8(k) /= acc_r8) call fail('SHMEM_REAL8_MIN_TO_ALL', start, logstride, size)
    end do
    ! SHMEM_INT4_SUM_TO_ALL
    do k = 1, n
      m = me
      src_i4(k) = int(m * 10 + k, 4)
      dst_i4(k) = -src_i4(k)
    end do
    call shmem_barrier_all()
    call shmem_int4_sum_to_all(dst_i4, src_i4, n, start, logstride, size, pwrk_i4, psync)
    do k = 1, n
      do i = 0, size - 1
        m = start + i * 2**logstride
        x_i4 = int(m * 10 + k, 4)
        if (i == 0) then
          acc_i4 = x_i4
        else
          acc_i4 = acc_i4 + x_i4
        end if
      end do
      if (dst_i4(k) /= acc_i4) call fail('SHMEM_INT4_SUM_TO_ALL', start, logstride, size)
    end do
    ! SHMEM_INT8_SUM_TO_ALL
    do k = 1, n
      m = me
      src_i8(k) = int(m, 8) * 10000000000_8 + k
      dst_i8(k) = -src_i8(k)
    end do
    call shmem_barrier_all()
    call shmem_int8_sum_to_all(dst_i8, src_i8, n, start, logstride, size, pwrk_i8, psync)
    do k = 1, n
      do i = 0, size - 1
        m = start + i * 2**logstride
        x_i8 = int(m, 8) * 10000000000_8 + k
        if (i == 0) then
          acc_i8 = x_i8
        else
          acc_i8 = acc_i8 + x_i8
        end if
      end do
      if (dst_i8(k) /= acc_i8) call fail('SHMEM_INT8_SUM_TO_ALL', start, logstride, size)
    end do
    ! SHMEM_REAL4_SUM_TO_ALL
    do k = 1, n
      m = me
      src_r4(k) = real(m, 4) + real(k, 4) / 4.0
      dst_r4(k) = -src_r4(k)
    end do
    call shmem_barrier_all()
    call shmem_real4_sum_to_all(dst_r4, src_r4, n, start, logstride, size, pwrk_r4, psync)
    do k = 1, n
      do i = 0, size - 1
        m = start + i * 2**logstride
        x_r4 = real(m, 4) + real(k, 4) / 4.0
        if (i == 0) then
          acc_r4 = x_r4
        else
          acc_r4 = acc_r4 + x_r4
        end if
      end do
      if (dst_r4(k) /= acc_r4) call fail('SHMEM_REAL4_SUM_TO_ALL', start, logstride, size)
    end do
    ! SHMEM_REAL8_SUM_TO_ALL
    do k = 1, n
      m = me
      src_r8(k) = real(m, 8) * 1.0d6 + real(k, 8) / 8.0d0
      dst_r8(k) = -src_r8(k)
    end do
    call shmem_barrier_all()
    call shmem_real8_sum_to_all(dst_r8, src_r8, n, start, logstride, size, pwrk_r8, psync)
    do k = 1, n
      do i = 0, size - 1
        m = start + i * 2**logstride
        x_r8 = real(m, 8) * 1.0d6 + real(k, 8) / 8.0d0
        if (i == 0) then
          acc_r8 = x_r8
        else
          acc_r8 = acc_r8 + x_r8
        end if
      end do
      if (dst_r8(k) /= acc_r8) call fail('SHMEM_REAL8_SUM_TO_ALL', start, logstride, size)
    end do
    ! SHMEM_COMP4_SUM_TO_ALL
    do k = 1, n
      m = me
      src_c4(k) = cmplx(m, k, kind=4)
      dst_c4(k) = -src_c4(k)
    end do
    call shmem_barrier_all()
    call shmem_comp4_sum_to_all(dst_c4, src_c4, n, start, logstride, size, pwrk_c4, psync)
    do k = 1, n
      do i = 0, size - 1
        m = start + i * 2**logstride
        x_c4 = cmplx(m, k, kind=4)
        if (i == 0) then
          acc_c4 = x_c4
        else
          acc_c4 = acc_c4 + x_c4
        end if
      end do
      if (dst_c4(k) /= acc_c4) call fail('SHMEM_COMP4_SUM_TO_ALL', start, logstride, size)
    end do
    ! SHMEM_COMP8_SUM_TO_ALL
    do k = 1, n
      m = me
      src_c8(k) = cmplx(m, -k, kind=8)
      dst_c8(k) = -src_c8(k)
    end do
    call shmem_barrier_all()
    call shmem_comp8_sum_to_all(dst_c8, src_c8, n, start, logstride, size, pwrk_c8, psync)
    do k = 1, n
      do i = 0, size - 1
        m = start + i * 2**logstride
        x_c8 = cmplx(m, -k, kind=8)
        if (i == 0) then
          acc_c8 = x_c8
        else
          acc_c8 = acc_c8 + x_c8
        end if
      end do
      if (dst_c8(k) /= acc_c8) call fail('SHMEM_COMP8_SUM_TO_ALL', start, logstride, size)
    end do
    ! SHMEM_INT4_PROD_TO_ALL
    do k = 1, n
      m = me
      src_i4(k) = int(1 + mod(m + k, 3), 4)
      dst_i4(k) = -src_i4(k)
    end do
    call shmem_barrier_all()
    call shmem_int4_prod_to_all(dst_i4, src_i4, n, start, logstride, size, pwrk_i4, psync)
    do k = 1, n
      do i = 0, size - 1
        m = start + i * 2**logstride
        x_i4 = int(1 + mod(m + k, 3), 4)
        if (i == 0) then
          acc_i4 = x_i4
        else
          acc_i4 = acc_i4 * x_i4
        end if
      end do
      if (dst_i4(k) /= acc_i4) call fail('SHMEM_INT4_PROD_TO_ALL', start, logstride, size)
    end do
    ! SHMEM_INT8_PROD_TO_ALL
    do k = 1, n
      m = me
      src_i8(k) = int(1 + mod(m + k, 3), 8) * 1000_8
      dst_i8(k) = -src_i8(k)
    end do
    call shmem_barrier_all()
    call shmem_int8_prod_to_all(dst_i8, src_i8, n, start, logstride, size, pwrk_i8, psync)
    do k = 1, n
      do i = 0, size - 1
        m = start + i * 2**logstride
        x_i8 = int(1 + mod(m + k, 3), 8) * 1000_8
        if (i == 0) then
          acc_i8 = x_i8
        else
          acc_i8 = acc_i8 * x_i8
        end if
      end do
      if (dst_i8(k) /= acc_i8) call fail('SHMEM_INT8_PROD_TO_ALL', start, logstride, size)
    end do
    ! SHMEM_REAL4_PROD_TO_ALL
    do k = 1, n
      m = me
      src_r4(k) = real(1 + mod(m + k, 3), 4) / 2.0
      dst_r4(k) = -src_r4(k)
    end do
    call shmem_barrier_all()
    call shmem_real4_prod_to_all(dst_r4, src_r4, n, start, logstride, size, pwrk_r4, psync)
    do k = 1, n
      do i = 0, size - 1
        m = start + i * 2**logstride
        x_r4 = real(1 + mod(m + k, 3), 4) / 2.0
        if (i == 0) then
          acc_r4 = x_r4
        else
          acc_r4 = acc_r4 * x_r4
        end if
      end do
      if (dst_r4(k) /= acc_r4) call fail('SHMEM_REAL4_PROD_TO_ALL', start, logstride, size)
    end do
    ! SHMEM_REAL8_PROD_TO_ALL
    do k = 1, n
      m = me
      src_r8(k) = real(1 + mod(m + k, 3), 8) * 0.5d0
      dst_r8(k) = -src_r8(k)
    end do
    call shmem_barrier_all()
    call shmem_real8_prod_to_all(dst_r8, src_r8, n, start, logstride, size, pwrk_r8, psync)
    do k = 1, n
      do i = 0, size - 1
        m = start + i * 2**logstride
        x_r8 = real(1 + mod(m + k, 3), 8) * 0.5d0
        if (i == 0) then
          acc_r8 = x_r8
        else
          acc_r8 = acc_r8 * x_r8
        end if
      end do
      if (dst_r8(k) /= acc_r8) call fail('SHMEM_REAL8_PROD_TO_ALL', start, logstride, size)
    end do
    ! SHMEM_COMP4_PROD_TO_ALL
    do k = 1, n
      m = me
      src_c4(k) = cmplx(1 + mod(m + k, 2), mod(m, 2), kind=4)
      dst_c4(k) = -src_c4(k)
    end do
    call shmem_barrier_all()
    call shmem_comp4_prod_to_all(dst_c4, src_c4, n, start, logstride, size, pwrk_c4, psync)
    do k = 1, n
      do i = 0, size - 1
        m = start + i * 2**logstride
        x_c4 = cmplx(1 + mod(m + k, 2), mod(m, 2), kind=4)
        if (i == 0) then
          acc_c4 = x_c4
        else
          acc_c4 = acc_c4 * x_c4
        end if
      end do
      if (dst_c4(k) /= acc_c4) call fail('SHMEM_COMP4_PROD_TO_ALL', start, logstride, size)
    end do
    ! SHMEM_COMP8_PROD_TO_ALL
    do k = 1, n
      m = me
      src_c8(k) = cmplx(mod(m, 2), 1 + mod(m + k, 2), kind=8)
      dst_c8(k) = -src_c8(k)
    end do
    call shmem_barrier_all()
    call shmem_comp8_prod_to_all(dst_c8, src_c8, n, start, logstride, size, pwrk_c8, psync)
    do k = 1, n
      do i = 0, size - 1
        m = start + i * 2**logstride
        x_c8 = cmplx(mod(m, 2), 1 + mod(m + k, 2), kind=8)
        if (i == 0) then
          acc_c8 = x_c8
        else
          acc_c8 = acc_c8 * x_c8
        end if
      end do
      if (dst_c8(k) /= acc_c8) call fail('SHMEM_COMP8_PROD_TO_ALL', start, logstride, size)
    end do
  end subroutine all_reductions
end program reduce
