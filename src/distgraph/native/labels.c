/* Label propagation's rating (partition/stream/coarsen.py): for each row, the label most of its
 * neighbours carry among those it may join. numpy needs a sort of every (row, label) pair for
 * this; here a dense counter per label, cleared through the list of labels a row touched. */
#include <stdint.h>

#define TIE_BITS 8

/* Row r (node_weight[r], own label own[r]) has neighbours cols[indptr[r]:indptr[r+1]], labelled `label`.
 * A label may be joined when it is the row's own or label_weight[l] + node_weight[r] <= max_weight;
 * the best has the highest count << TIE_BITS | ((l * salt) >> (64 - TIE_BITS)), the larger label on
 * a tie. Out: best_label[r] (-1: none may be joined), its count, and the count of the own label.
 * `count` (zeroed, one per label) and `touched` (the longest row) are scratch; count is left zeroed.
 * Returns how many rows have a better label than their own. */
int64_t best_labels(int64_t nrows, const int64_t *indptr, const int32_t *cols, const int32_t *label, const int32_t *own,
                    const int64_t *label_weight, const int64_t *node_weight, int64_t max_weight, uint64_t salt,
                    int32_t *count, int32_t *touched, int32_t *best_label, int64_t *best_count,
                    int64_t *own_count) {
    int64_t better = 0;
    for (int64_t r = 0; r < nrows; r++) {
        int64_t nt = 0;
        for (int64_t j = indptr[r]; j < indptr[r + 1]; j++) {
            int32_t l = label[cols[j]];
            if (count[l]++ == 0) touched[nt++] = l;
        }
        int64_t best = -1, bl = -1, bc = 0, oc = 0;
        for (int64_t t = 0; t < nt; t++) {
            int32_t l = touched[t];
            int64_t c = count[l];
            count[l] = 0;
            if (l == own[r])
                oc = c;
            else if (label_weight[l] + node_weight[r] > max_weight)
                continue;
            int64_t score = c << TIE_BITS | (int64_t)(((uint64_t)l * salt) >> (64 - TIE_BITS));
            if (score > best || (score == best && l > bl)) {
                best = score;
                bl = l;
                bc = c;
            }
        }
        best_label[r] = (int32_t)bl;
        best_count[r] = bc;
        own_count[r] = oc;
        better += bl >= 0 && bl != own[r] && bc > oc;
    }
    return better;
}
