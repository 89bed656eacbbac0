// Tests for TillSimulator arrive with the issue that builds it.
import Testing
