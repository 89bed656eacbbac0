// Tests for TillServer arrive with the issue that builds it.
import Testing
