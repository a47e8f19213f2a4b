! Setup and queries through shmem.fh, in fixed form: START_PES (and the
! implicit finalize at exit: this program never calls SHMEM_FINALIZE),
! MY_PE, NUM_PES, SHMEM_MY_PE, SHMEM_N_PES, SHMEM_PE_ACCESSIBLE,
! SHMEM_ADDR_ACCESSIBLE, SHMEM_PTR with Cray pointers on SAVE data and
! on SHPALLOC memory, SHMEM_INFO_GET_VERSION, SHMEM_INFO_GET_NAME with
! long and short names, the parameters of shmem.fh, the cache routines.
! Needs -fcray-pointer.
      PROGRAM INIT
      IMPLICIT NONE
      INCLUDE 'shmem.fh'
      INTEGER MY_PE, NUM_PES, SHMEM_MY_PE, SHMEM_N_PES
      INTEGER ME, NPES, PE, I, RIGHT, LEFT, MAJOR, MINOR, IERR
      CHARACTER(LEN=SHMEM_MAX_NAME_LEN) NAME
      CHARACTER(LEN=4) SHORT
      INTEGER BIGD(100)
      SAVE BIGD
      INTEGER POINTEE(100)
      POINTER (PTR, POINTEE)
      INTEGER HEAP(100)
      POINTER (PHEAP, HEAP)

      CALL START_PES(0)
      ME = MY_PE()
      NPES = NUM_PES()
      IF (ME .NE. SHMEM_MY_PE()) CALL FAIL(ME, 'SHMEM_MY_PE')
      IF (NPES .NE. SHMEM_N_PES()) CALL FAIL(ME, 'SHMEM_N_PES')
      IF (NPES .LT. 2 .OR. ME .LT. 0 .OR. ME .GE. NPES)
     &    CALL FAIL(ME, 'MY_PE/NUM_PES out of range')
      RIGHT = MOD(ME + 1, NPES)
      LEFT = MOD(ME + NPES - 1, NPES)

! Accessibility: every PE, and the SAVE array on each; no PE past
! the last.
      DO PE = 0, NPES - 1
        IF (.NOT. SHMEM_PE_ACCESSIBLE(PE))
     &      CALL FAIL(ME, 'SHMEM_PE_ACCESSIBLE')
        IF (.NOT. SHMEM_ADDR_ACCESSIBLE(BIGD, PE))
     &      CALL FAIL(ME, 'SHMEM_ADDR_ACCESSIBLE')
      END DO
      IF (SHMEM_PE_ACCESSIBLE(NPES))
     &    CALL FAIL(ME, 'SHMEM_PE_ACCESSIBLE(NPES) is true')

! SHMEM_PTR on the symmetric heap: this PE's own address, and stores
! through a Cray pointer into the right neighbour's block.
      CALL SHPALLOC(PHEAP, 100, IERR, 1)
      IF (IERR .NE. 0) CALL FAIL(ME, 'SHPALLOC')
      IF (SHMEM_PTR(HEAP, ME) .NE. PHEAP)
     &    CALL FAIL(ME, 'SHMEM_PTR(heap, me) is not the address')
      DO I = 1, 100
        HEAP(I) = -1
        BIGD(I) = -1
      END DO
      CALL SHMEM_BARRIER_ALL()
      PTR = SHMEM_PTR(HEAP, RIGHT)
      IF (PTR .NE. 0) THEN
        DO I = 1, 100
          POINTEE(I) = ME * 1000 + I
        END DO
      ELSE
        DO I = 1, 100
          HEAP(I) = ME * 1000 + I
        END DO
      END IF
      CALL SHMEM_BARRIER_ALL()
      IF (PTR .NE. 0) THEN
        DO I = 1, 100
          IF (HEAP(I) .NE. LEFT * 1000 + I)
     &        CALL FAIL(ME, 'store through SHMEM_PTR(heap)')
        END DO
      END IF

! The same on SAVE data (the specification's example), where the
! runtime maps it: else SHMEM_PTR is 0.
      PTR = SHMEM_PTR(BIGD, RIGHT)
      IF (PTR .NE. 0) THEN
        DO I = 1, 100
          POINTEE(I) = ME * 1000 + I
        END DO
      END IF
      CALL SHMEM_BARRIER_ALL()
      IF (PTR .NE. 0) THEN
        DO I = 1, 100
          IF (BIGD(I) .NE. LEFT * 1000 + I)
     &        CALL FAIL(ME, 'store through SHMEM_PTR(SAVE)')
        END DO
      END IF

! Version and name, and the parameters that say the same.
      CALL SHMEM_INFO_GET_VERSION(MAJOR, MINOR)
      IF (MAJOR .NE. SHMEM_MAJOR_VERSION .OR. MAJOR .NE. 1)
     &    CALL FAIL(ME, 'SHMEM_INFO_GET_VERSION major')
      IF (MINOR .NE. SHMEM_MINOR_VERSION .OR. MINOR .NE. 5)
     &    CALL FAIL(ME, 'SHMEM_INFO_GET_VERSION minor')
      NAME = 'x'
      CALL SHMEM_INFO_GET_NAME(NAME)
      IF (NAME .NE. SHMEM_VENDOR_STRING .OR. NAME(1:8) .NE. 'oxshmem ')
     &    CALL FAIL(ME, 'SHMEM_INFO_GET_NAME')
      IF (LEN_TRIM(NAME) .LT. 9 .OR. NAME(SHMEM_MAX_NAME_LEN:) .NE. ' ')
     &    CALL FAIL(ME, 'SHMEM_INFO_GET_NAME is not blank-padded')
      CALL SHMEM_INFO_GET_NAME(SHORT)
      IF (SHORT .NE. 'oxsh') CALL FAIL(ME, 'SHMEM_INFO_GET_NAME(LEN=4)')
      IF (SHMEM_CMP_EQ .EQ. SHMEM_CMP_NE .OR. SHMEM_SYNC_VALUE .NE. 0)
     &    CALL FAIL(ME, 'parameters')
      IF (SHMEM_BCAST_SYNC_SIZE .LT. 2 .OR.
     &    SHMEM_REDUCE_MIN_WRKDATA_SIZE .LT. 1)
     &    CALL FAIL(ME, 'sync sizes')

! The cache routines do nothing, and say nothing.
      CALL SHMEM_SET_CACHE_INV()
      CALL SHMEM_CLEAR_CACHE_INV()
      CALL SHMEM_UDCFLUSH()
      CALL SHMEM_SET_CACHE_LINE_INV(BIGD)
      CALL SHMEM_CLEAR_CACHE_LINE_INV(BIGD)
      CALL SHMEM_UDCFLUSH_LINE(BIGD)

      CALL SHPDEALLC(PHEAP, IERR, 1)
      IF (IERR .NE. 0) CALL FAIL(ME, 'SHPDEALLC')
      CALL SHMEM_BARRIER_ALL()
      PRINT *, 'PE', ME, ': OK'
      END

      SUBROUTINE FAIL(ME, WHAT)
      INTEGER ME
      CHARACTER*(*) WHAT
      PRINT *, 'PE', ME, ': FAILED ', WHAT
      CALL SHMEM_GLOBAL_EXIT(1)
      END
