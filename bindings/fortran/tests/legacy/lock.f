! The locks of shmem.fh, in fixed form: every PE takes a lock ITERS
! times with SHMEM_SET_LOCK and ITERS times with a SHMEM_TEST_LOCK retry
! loop, and while it holds the lock reads PE 0's counter, adds one and
! writes it back -- plain get and put, so the total is exact only if no
! two PEs ever held the lock at once. SHMEM_CLEAR_LOCK releases it; a
! second lock is independent of the first.
      PROGRAM LOCKS
      IMPLICIT NONE
      INCLUDE 'shmem.fh'
      INTEGER SHMEM_MY_PE, SHMEM_N_PES, SHMEM_TEST_LOCK
      INTEGER ITERS
      PARAMETER (ITERS = 50)
      INTEGER ME, NPES, I, TRIES
      INTEGER*8 LOCK1, LOCK2
      INTEGER COUNT, INSIDE
      COMMON /LCK/ LOCK1, LOCK2
      COMMON /SHARED/ COUNT, INSIDE

      CALL SHMEM_INIT()
      ME = SHMEM_MY_PE()
      NPES = SHMEM_N_PES()
      LOCK1 = 0
      LOCK2 = 0
      COUNT = 0
      INSIDE = 0
      CALL SHMEM_BARRIER_ALL()

      DO I = 1, ITERS
        CALL SHMEM_SET_LOCK(LOCK1)
        CALL BUMP(ME)
        CALL SHMEM_CLEAR_LOCK(LOCK1)
      END DO
! Everyone is done with LOCK1 before anyone counts under LOCK2.
      CALL SHMEM_BARRIER_ALL()
      DO I = 1, ITERS
        TRIES = 0
   10   IF (SHMEM_TEST_LOCK(LOCK2) .NE. 0) THEN
          TRIES = TRIES + 1
          IF (TRIES .GT. 100000000) THEN
            PRINT *, 'PE', ME, ': FAILED SHMEM_TEST_LOCK never succeeds'
            CALL SHMEM_GLOBAL_EXIT(1)
          END IF
          GO TO 10
        END IF
        CALL BUMP(ME)
        CALL SHMEM_CLEAR_LOCK(LOCK2)
      END DO
      CALL SHMEM_BARRIER_ALL()

      IF (ME .EQ. 0 .AND. COUNT .NE. 2 * ITERS * NPES) THEN
        PRINT *, 'PE', ME, ': FAILED count', COUNT
        CALL SHMEM_GLOBAL_EXIT(1)
      END IF
! A free lock tests 0 (and is taken), a held one 1.
      CALL SHMEM_BARRIER_ALL()
      IF (ME .EQ. 0) THEN
        IF (SHMEM_TEST_LOCK(LOCK1) .NE. 0) THEN
          PRINT *, 'PE', ME, ': FAILED SHMEM_TEST_LOCK on a free lock'
          CALL SHMEM_GLOBAL_EXIT(1)
        END IF
      END IF
      CALL SHMEM_BARRIER_ALL()
      IF (ME .EQ. NPES - 1 .AND. ME .NE. 0) THEN
        IF (SHMEM_TEST_LOCK(LOCK1) .EQ. 0) THEN
          PRINT *, 'PE', ME, ': FAILED SHMEM_TEST_LOCK on a held lock'
          CALL SHMEM_GLOBAL_EXIT(1)
        END IF
      END IF
      CALL SHMEM_BARRIER_ALL()
      IF (ME .EQ. 0) CALL SHMEM_CLEAR_LOCK(LOCK1)
      CALL SHMEM_BARRIER_ALL()
      PRINT *, 'PE', ME, ': OK'
      CALL SHMEM_FINALIZE()
      END

! One increment of PE 0's COUNT by get and put, with a check that
! nobody else is inside: INSIDE on PE 0 goes 0 -> 1 -> 0.
      SUBROUTINE BUMP(ME)
      IMPLICIT NONE
      INTEGER ME, C, I
      INTEGER COUNT, INSIDE
      COMMON /SHARED/ COUNT, INSIDE
      INTEGER SHMEM_INT4_FADD
      IF (SHMEM_INT4_FADD(INSIDE, 1, 0) .NE. 0) THEN
        PRINT *, 'PE', ME, ': FAILED two PEs hold the lock'
        CALL SHMEM_GLOBAL_EXIT(1)
      END IF
      CALL SHMEM_INTEGER_GET(C, COUNT, 1, 0)
      C = C + 1
      CALL SHMEM_INTEGER_PUT(COUNT, C, 1, 0)
      CALL SHMEM_QUIET()
      I = SHMEM_INT4_FADD(INSIDE, -1, 0)
      END
