/* placeholder until libctx lands */
int ctx_placeholder_;
