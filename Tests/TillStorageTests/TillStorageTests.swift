// Tests for TillStorage arrive with the issue that builds it.
import Testing
