// Tests for TillClient arrive with the issue that builds it.
import Testing
