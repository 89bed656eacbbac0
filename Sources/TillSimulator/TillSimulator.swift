// Built by a later issue; see ARCHITECTURE.
