"""`python -m evals.bench_gpu`: the GPU figures in one prepared run (`evals.bench.gpu`)."""
from evals.bench.gpu import main

if __name__ == "__main__":
    main()
