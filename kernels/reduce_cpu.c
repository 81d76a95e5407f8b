/* placeholder: being written */
typedef int orb_placeholder_t;
