set -u
for v in staged direct; do
  B=/tmp/b-$v; flag=""; [ $v = direct ] && flag="-DCELLINT_LIST_STAGED_BYTES=0"
  cmake -S . -B $B -DCMAKE_BUILD_TYPE=Release -DCELLINT_ENABLE_CUDA=ON -DCMAKE_CUDA_ARCHITECTURES=90 -DCELLINT_BUILD_EXAMPLES=ON -DCELLINT_BUILD_BENCHMARKS=OFF -DCELLINT_BUILD_TESTS=OFF -DCMAKE_CUDA_FLAGS="$flag" -G Ninja >/dev/null 2>&1 &
done; wait
for v in staged direct; do cmake --build /tmp/b-$v --target cellint_lj_cuda -j8 >/tmp/b-$v.log 2>&1 & done; wait
for v in staged direct; do
  L=/tmp/b-$v/examples/lj/cellint_lj_cuda
  echo "== $v"; $L --cells 80 --steps 400 --thermo 0 --precision float | grep -E "^Performance"
  ncu --metrics gpu__time_duration.sum -k regex:"List|Element" --launch-skip 200 --launch-count 300 $L --cells 80 --steps 60 --thermo 0 --precision float --graph no > /tmp/ncu-$v.txt 2>&1
  python3 - /tmp/ncu-$v.txt <<'PY'
import re,sys,collections
t=collections.defaultdict(list);name=None
for line in open(sys.argv[1]):
    m=re.match(r'\s+(?:void )?cellint::detail::block_kernel<cellint::detail::(\w+)<(?:cellint::detail::)?(\w+)?',line)
    if m: name=m.group(1)+('/'+m.group(2) if m.group(1)=='ElementKernel' else '')
    m=re.search(r'gpu__time_duration.sum\s+(\S+)\s+([\d.,]+)',line)
    if m and name:
        v=float(m.group(2).replace(',',''));u=m.group(1)
        v*= {'nsecond':1e-3,'usecond':1,'msecond':1e3,'second':1e6}.get(u,1)
        t[name].append(v)
for k,v in sorted(t.items(),key=lambda kv:-max(kv[1])):
    v.sort(); print('%-40s n=%3d median %9.1f us  max %9.1f us'%(k,len(v),v[len(v)//2],v[-1]))
PY
done
