/* A plain C program using the installed mlops-vocab: greedy and top-k sampling of one row on the
 * host emulation. Built by find_package(mlops COMPONENTS vocab) (CMakeLists.txt) or by pkg-config:
 *   cc main.c $(pkg-config --cflags --libs mlops-vocab) -o vocab_demo */
#include <stdio.h>
#include <string.h>

#include "mlops/vocab.h"

int main(void) {
  enum { V = 10 };
  float z[2 * V];
  for (int i = 0; i < V; ++i) z[i] = z[V + i] = (float)((i * 7) % V);
  mlops_sample_config cfg[2] = {{0.0f, 0, 1.0f, 0.0f, 1.0f, 0.0f, 0.0f, 0}, {0.8f, 3, 1.0f, 0.0f, 1.0f, 0.0f, 0.0f, 0}};
  uint64_t seeds[2] = {1, 1};
  int64_t steps[2] = {0, 0};
  int32_t tokens[2];
  mlops_sample_args a;
  memset(&a, 0, sizeof a);
  a.rows = 2; a.vocab = V; a.logits = z; a.logits_stride = V; a.configs = cfg; a.seeds = seeds; a.steps = steps;
  a.tokens = tokens; a.variant = -1;
  mlops_status s = mlops_sample_host(&a);
  if (s != MLOPS_OK) {
    printf("mlops_sample_host: %s: %s\n", mlops_status_string(s), mlops_vocab_last_error());
    return 1;
  }
  printf("tokens = %d %d\n", tokens[0], tokens[1]);
  return 0;
}
